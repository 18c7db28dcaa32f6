//! Kernel memory for sockets: slab and TCP buffer pages.
