//! Writing results: JSON, CSV and HdrHistogram logs. Every file is written
//! to a temporary name beside it and renamed into place, so a reader (or a
//! run that is killed) never sees half a file.

pub mod results;
pub mod table;

use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Pretty JSON.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    text.push(b'\n');
    write_atomic(path, &text)
}

/// CSV with a header row from the field names.
pub fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).map_err(io::Error::other)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?;
    write_atomic(path, &bytes)
}

/// One histogram (values in nanoseconds) as an HdrHistogram interval log,
/// readable by HdrHistogram's tools (HistogramLogProcessor, the plotter);
/// the max column is in microseconds.
pub fn write_hdr(
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
    write_atomic(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = std::env::temp_dir().join(format!("c10k-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary files left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
