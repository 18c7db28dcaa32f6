//! Small presentation helpers at the bottom of the crate, shared by the
//! engines that print tables (micro, herd, runner) and the report above
//! them: numbers for people ([`units`]), lists in sentences ([`words`]) and
//! a model's look in a chart ([`look`]). They import nothing above `server` (for its registry).

pub mod look;
pub mod units;
pub mod words;
