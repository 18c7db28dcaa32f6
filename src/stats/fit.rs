//! Power-law fit: least squares of log(time) on log(connections).
// (written by the report helper)
