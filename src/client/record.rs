//! The per-connection record: one CSV row per connection, as in the
//! COMP 8005 study (requests, bytes, response times, session duration).

use serde::{Deserialize, Serialize};

use super::conn::Conn;

/// What happened on one connection.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConnRecord {
    pub id: u32,
    /// Source address, when one was chosen.
    pub source: String,
    /// Measured messages echoed.
    pub requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Round trips of the measured messages, in microseconds.
    pub avg_response_us: f64,
    pub min_response_us: f64,
    pub max_response_us: f64,
    /// Connect start to established, in microseconds (empty if never up).
    pub connect_us: Option<f64>,
    /// Established (or connect start) to close, in microseconds.
    pub session_us: f64,
    /// Why it ended early; empty when it did not.
    pub error: String,
}

impl ConnRecord {
    pub fn of(c: &Conn) -> ConnRecord {
        let us = |ns: f64| ns / 1000.0;
        let from = c.established.or(c.connect_started);
        ConnRecord {
            id: c.id,
            source: c.source.map(|s| s.to_string()).unwrap_or_default(),
            requests: c.requests,
            bytes_sent: c.bytes_sent,
            bytes_received: c.bytes_received,
            avg_response_us: if c.requests > 0 {
                us(c.rt_sum_ns as f64 / c.requests as f64)
            } else {
                0.0
            },
            min_response_us: if c.requests > 0 {
                us(c.rt_min_ns as f64)
            } else {
                0.0
            },
            max_response_us: us(c.rt_max_ns as f64),
            connect_us: match (c.connect_started, c.established) {
                (Some(a), Some(b)) => Some((b - a).as_nanos() as f64 / 1000.0),
                _ => None,
            },
            session_us: match (from, c.ended) {
                (Some(a), Some(b)) => (b - a).as_nanos() as f64 / 1000.0,
                _ => 0.0,
            },
            error: c.failure.map(|f| f.name().to_string()).unwrap_or_default(),
        }
    }
}
