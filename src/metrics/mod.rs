//! Sampling what a server costs from outside: the memory of its process
//! tree ([`tree`]) and the kernel's memory for sockets ([`kernel`]).

pub mod cpu;
pub mod kernel;
pub mod tree;
