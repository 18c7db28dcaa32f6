//! What a run's results say: the ranking with ties ([`summary`]), memory
//! per connection as slopes ([`memory`]), the bound the handler work allows
//! beside each figure ([`bound`]), capacity at a latency target with
//! its queueing bound ([`capacity`]), the runs disturbed from outside
//! ([`disturbed`]) and the verdict ([`verdict`]). Reads records only
//! ([`crate::results`]); runs nothing.

pub mod bound;
pub mod capacity;
pub mod disturbed;
pub mod memory;
pub mod settled;
pub mod summary;
pub mod tune;
pub mod tuned;
pub mod verdict;
