//! The wire protocols c10k speaks, named once: a server serves one
//! (`c10k serve --protocol`), the load generator drives one (`c10k load
//! --protocol`), and every record says which. Echo (RFC 862) is the
//! default; HTTP/1.1 is the protocol of the servers users build and of the
//! web servers they compare with (nginx, Go's `net/http`, Node's `http`).
//!
//! What a message is follows from it: an echo's round trip is
//! `--message-size` bytes out and the same bytes back, checked byte for
//! byte; an HTTP round trip is one request and its response, framed by
//! the response's `Content-Length` or chunked encoding, its status
//! counted. The server's side is `server/http.rs`, the client's
//! `client/http.rs`. Cost: nothing; a name.

use serde::{Deserialize, Serialize};

/// A protocol c10k serves and drives.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Every byte sent comes back (RFC 862).
    #[default]
    Echo,
    /// HTTP/1.1: a request, a response; keep-alive and pipelining.
    Http,
}

impl Protocol {
    /// Its name on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Echo => "echo",
            Protocol::Http => "http",
        }
    }

    /// Whether it is echo (the default, left out of what is written).
    pub fn is_echo(&self) -> bool {
        *self == Protocol::Echo
    }

    /// What one round trip is called in prose: an echo, a request.
    pub fn message(self) -> &'static str {
        match self {
            Protocol::Echo => "echo",
            Protocol::Http => "request",
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The body of the default response: TechEmpower's plaintext, 13 bytes.
pub const HELLO: &[u8] = b"Hello, World!";
