//! The per-connection record: one CSV row per connection, as in the
//! COMP 8005 study (requests, bytes, response times, session duration),
//! and the bounded list an event loop keeps them in.
//!
//! Churn makes a record per attempt without end (210,000 in 5 s against a
//! refusing port, about 160 bytes each), so a loop keeps at most a cap of
//! records and only counts the rest: memory stays bounded however long
//! the run, and every count in the report still covers every attempt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::conn::{Conn, Failure};

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
    #[serde(with = "failure_or_empty")]
    pub error: Option<Failure>,
}

/// A record's `error`: the failure's name, or empty (not `null`) when the
/// connection did not fail, in the CSV and between processes alike.
mod failure_or_empty {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Failure;

    pub fn serialize<S: Serializer>(f: &Option<Failure>, s: S) -> Result<S::Ok, S::Error> {
        match f {
            Some(f) => f.serialize(s),
            None => s.serialize_str(""),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Failure>, D::Error> {
        let name = String::deserialize(d)?;
        if name.is_empty() {
            return Ok(None);
        }
        Failure::deserialize(serde::de::value::StrDeserializer::new(&name)).map(Some)
    }
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
            error: c.failure,
        }
    }
}

/// Records beyond the cap: what the report needs of them, summed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Tally {
    pub count: u64,
    pub established: u64,
    /// Failures by kind (the `error` field's values).
    pub errors: BTreeMap<Failure, u64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl Tally {
    fn add(&mut self, r: &ConnRecord) {
        self.count += 1;
        self.established += u64::from(r.connect_us.is_some());
        if let Some(f) = r.error {
            *self.errors.entry(f).or_default() += 1;
        }
        self.bytes_sent += r.bytes_sent;
        self.bytes_received += r.bytes_received;
    }

    fn merge(&mut self, o: Tally) {
        self.count += o.count;
        self.established += o.established;
        for (k, n) in o.errors {
            *self.errors.entry(k).or_default() += n;
        }
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
    }
}

/// An event loop's (or a whole run's) records: the first `cap` kept, the
/// rest counted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Records {
    pub kept: Vec<ConnRecord>,
    pub beyond: Tally,
    cap: usize,
}

impl Records {
    /// Keeps at most `cap` records (`usize::MAX`: every one).
    pub fn new(cap: usize) -> Records {
        Records {
            kept: Vec::new(),
            beyond: Tally::default(),
            cap,
        }
    }

    pub fn push(&mut self, r: ConnRecord) {
        if self.kept.len() < self.cap {
            self.kept.push(r);
        } else {
            self.beyond.add(&r);
        }
    }

    /// Adds another loop's or process's records (each was bounded where
    /// it was made).
    pub fn merge(&mut self, o: Records) {
        self.kept.extend(o.kept);
        self.beyond.merge(o.beyond);
    }

    /// Every record made, kept or counted.
    pub fn total(&self) -> u64 {
        self.kept.len() as u64 + self.beyond.count
    }

    /// Connections that came up, kept or counted.
    pub fn established(&self) -> u64 {
        self.kept.iter().filter(|r| r.connect_us.is_some()).count() as u64 + self.beyond.established
    }

    /// Failures by kind, kept or counted.
    pub fn errors(&self) -> BTreeMap<Failure, u64> {
        let mut e = self.beyond.errors.clone();
        for f in self.kept.iter().filter_map(|r| r.error) {
            *e.entry(f).or_default() += 1;
        }
        e
    }

    pub fn bytes(&self) -> (u64, u64) {
        let sent = self.kept.iter().map(|r| r.bytes_sent).sum::<u64>();
        let received = self.kept.iter().map(|r| r.bytes_received).sum::<u64>();
        (
            sent + self.beyond.bytes_sent,
            received + self.beyond.bytes_received,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u32, error: Option<Failure>, up: bool) -> ConnRecord {
        ConnRecord {
            id,
            source: String::new(),
            requests: 1,
            bytes_sent: 10,
            bytes_received: 7,
            avg_response_us: 0.0,
            min_response_us: 0.0,
            max_response_us: 0.0,
            connect_us: up.then_some(5.0),
            session_us: 0.0,
            error,
        }
    }

    #[test]
    fn past_the_cap_records_are_counted_not_kept() {
        let mut a = Records::new(2);
        for i in 0..5 {
            a.push(rec(i, (i % 2 == 0).then_some(Failure::Refused), i % 2 == 1));
        }
        assert_eq!(a.kept.len(), 2);
        assert_eq!(a.total(), 5);
        assert_eq!(a.established(), 2);
        assert_eq!(a.errors().get(&Failure::Refused), Some(&3));
        assert_eq!(a.bytes(), (50, 35));
        let mut b = Records::new(1);
        b.push(rec(9, Some(Failure::Reset), true));
        b.push(rec(10, Some(Failure::Reset), true));
        a.merge(b);
        assert_eq!((a.kept.len(), a.total()), (3, 7));
        assert_eq!(a.errors().get(&Failure::Reset), Some(&2));
        assert_eq!(a.established(), 4);
    }

    #[test]
    fn a_record_without_a_failure_says_so_with_an_empty_error() {
        let mut r = rec(1, None, true);
        let json = serde_json::to_value(&r).expect("a record serializes");
        assert_eq!(json["error"], "");
        assert_eq!(
            serde_json::from_value::<ConnRecord>(json).ok().as_ref(),
            Some(&r)
        );
        r.error = Some(Failure::AddrNotAvail);
        let json = serde_json::to_value(&r).expect("a record serializes");
        assert_eq!(json["error"], "addr_not_avail");
        assert_eq!(serde_json::from_value::<ConnRecord>(json).ok(), Some(r));
    }
}
