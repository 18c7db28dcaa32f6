//! How the herd's workers wait for a connection: the six methods `c10k
//! herd --methods` names, and what each needs of the listener. Plain data;
//! the waiting itself is in [`super::worker`].

/// How the workers wait for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    /// select(2) over the worker's copies of the listener.
    Select,
    /// poll(2) over the copies.
    Poll,
    /// epoll, level-triggered, one epoll instance per worker.
    Epoll,
    /// epoll with EPOLLEXCLUSIVE on every copy.
    EpollExclusive,
    /// accept(2) blocking on the shared (blocking) listener.
    Accept,
    /// Each worker its own SO_REUSEPORT listener on one port, watched with
    /// level-triggered epoll.
    Reuseport,
}

impl Method {
    pub(crate) const ALL: [Method; 6] = [
        Method::Select,
        Method::Poll,
        Method::Epoll,
        Method::EpollExclusive,
        Method::Accept,
        Method::Reuseport,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Select => "select",
            Method::Poll => "poll",
            Method::Epoll => "epoll",
            Method::EpollExclusive => "epoll-exclusive",
            Method::Accept => "accept",
            Method::Reuseport => "reuseport",
        }
    }

    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the workers share the parent's listener (all but reuseport).
    pub(crate) fn shares_listener(self) -> bool {
        self != Method::Reuseport
    }

    /// Whether the listener is non-blocking, so a worker that lost the race
    /// gets EAGAIN (all but blocking accept).
    pub(crate) fn nonblocking(self) -> bool {
        self != Method::Accept
    }
}
