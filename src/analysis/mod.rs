//! What a run's results say: the ranking with ties ([`summary`]), memory
//! per connection as slopes ([`memory`]), the bound the handler work allows
//! beside each figure ([`bound`]), the runs disturbed from outside
//! ([`disturbed`]) and the verdict ([`verdict`]). Reads records only
//! ([`crate::results`]); runs nothing. Capacity at a target and tuning
//! have rooms of their own: [`crate::capacity`], [`crate::tuning`].

pub mod bound;
pub mod disturbed;
pub mod memory;
pub mod settled;
pub mod summary;
pub mod verdict;
