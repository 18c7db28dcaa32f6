//! Memory of a process tree, summed from /proc.
