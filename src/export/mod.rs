//! Writing results: JSON, CSV and HdrHistogram logs, each through
//! [`target::write`]: a file is written to a temporary name beside it and
//! renamed into place, so a reader (or a run that is killed) never sees half
//! a file; a symlink, a device or a FIFO is written as what it is.

pub mod table;
pub mod target;

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Pretty JSON.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    text.push(b'\n');
    target::write(path, &text)
}

/// CSV with a header row from the field names.
pub(crate) fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).map_err(io::Error::other)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?;
    target::write(path, &bytes)
}

/// One histogram (values in nanoseconds) as an HdrHistogram interval log,
/// readable by HdrHistogram's tools (HistogramLogProcessor, the plotter);
/// the max column is in microseconds.
pub(crate) fn write_hdr(
    path: &Path,
    histograms: &[(&str, &Histogram<u64>)],
    start: SystemTime,
    length: Duration,
) -> io::Result<()> {
    let mut out = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    {
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment("c10k load: round-trip latency; values in nanoseconds")
            .with_start_time(start)
            .with_base_time(start)
            .with_max_value_divisor(1000.0)
            .begin_log_with(&mut out, &mut ser)?;
        for (tag, h) in histograms {
            log.write_histogram(*h, Duration::ZERO, length, Tag::new(tag))
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
        }
    }
    target::write(path, &out)
}
