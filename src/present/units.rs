//! Numbers as a person reads them on an axis or in a table: three
//! significant digits, `k`/`M`/`G` for large counts, times in ns, µs, ms or s;
//! counts with thousands separators ([`format_count`]); one unit for a
//! whole column of times or memory ([`Scale`]), so a column never mixes µs
//! and ms; and the one parser of byte sizes ([`parse_size`]) every command
//! and plan.json share.

/// What a value measures, which decides how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds.
    Seconds,
    /// Microseconds (written as a time with its own unit).
    Micros,
    /// A plain count or size (the axis label carries the unit).
    Count,
    /// Per second.
    Rate,
}

impl Unit {
    /// `v` written in this unit.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Seconds => seconds(v),
            Unit::Micros => seconds(v / 1e6),
            Unit::Count => count(v),
            Unit::Rate => format!("{}/s", count(v)),
        }
    }
}

/// The magnitudes past which a number is written in scientific notation
/// (`1.00e300`): beyond them no figure is a measurement, and the plain
/// digits would be a line of zeros, or (as an integer) a wrong number.
const PLAIN: std::ops::RangeInclusive<i32> = -9..=15;

/// `v` to three significant digits (all the digits of a whole number
/// above 999), trailing zeros dropped; `1.00e300` out of [`PLAIN`].
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i32;
    if !PLAIN.contains(&magnitude) {
        return format!("{v:.2e}");
    }
    let decimals = (2 - magnitude).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A rate or amount in full: thousands separated from 1,000 up (`20,000`),
/// three significant digits below (`0.05`).
pub(crate) fn amount(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format_count(v)
    } else {
        sig3(v)
    }
}

/// A count with an SI suffix: 380, 1.5k, 100k, 2.5M.
pub fn count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", sig3(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", sig3(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", sig3(v / 1e3))
    } else {
        sig3(v)
    }
}

/// A time in seconds, written in ns, µs, ms or s.
pub fn seconds(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "–".into()
    } else if a == 0.0 {
        "0 s".into()
    } else if a >= 1.0 {
        format!("{} s", sig3(v))
    } else if a >= 1e-3 {
        format!("{} ms", sig3(v * 1e3))
    } else if a >= 1e-6 {
        format!("{} µs", sig3(v * 1e6))
    } else {
        format!("{} ns", sig3(v * 1e9))
    }
}

/// One unit for a set of values, so that a column of a table reads in one
/// unit: the one the largest value reads from 1 to 999 in, or a smaller
/// one where that would write a small value with too many zeros, every
/// value written in it to three significant digits, thousands separated
/// (`0.206 ms`, `38.5 ms`; `8,407 KiB`, `0.00841 KiB`). Built from the values in their
/// own unit (seconds, µs or KiB) with [`Scale::seconds`], [`Scale::micros`]
/// or [`Scale::kib`]; non-finite values are left out of the choice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// Input units per output unit.
    per: f64,
    name: &'static str,
}

impl Scale {
    /// Times given in seconds: ns, µs, ms or s.
    pub fn seconds(values: impl IntoIterator<Item = f64>) -> Scale {
        const UNITS: [(f64, &str); 4] = [(1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s")];
        Scale::pick(values, &UNITS)
    }

    /// Times given in microseconds: ns, µs, ms or s.
    pub fn micros(values: impl IntoIterator<Item = f64>) -> Scale {
        const UNITS: [(f64, &str); 4] = [(1e-3, "ns"), (1.0, "µs"), (1e3, "ms"), (1e6, "s")];
        Scale::pick(values, &UNITS)
    }

    /// Memory given in KiB: B, KiB, MiB or GiB.
    pub fn kib(values: impl IntoIterator<Item = f64>) -> Scale {
        const UNITS: [(f64, &str); 4] = [
            (1.0 / 1024.0, "B"),
            (1.0, "KiB"),
            (1024.0, "MiB"),
            (1024.0 * 1024.0, "GiB"),
        ];
        Scale::pick(values, &UNITS)
    }

    /// The unit the largest value reads from 1 to 999 in, unless a number
    /// then takes more than [`Scale::WIDEST`] characters (`0.00000821`):
    /// then the next smaller unit that fits, or the one whose longest
    /// number is shortest. The smallest unit for an empty set.
    fn pick(values: impl IntoIterator<Item = f64>, units: &[(f64, &'static str)]) -> Scale {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let top = values.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let width = |s: &Scale| {
            values
                .iter()
                .map(|&v| s.number(v).chars().count())
                .max()
                .unwrap_or(0)
        };
        let scales: Vec<Scale> = units
            .iter()
            .map(|&(per, name)| Scale { per, name })
            .collect();
        // The largest unit the largest value is at least 1 in.
        let natural = scales.iter().rposition(|s| top >= s.per).unwrap_or(0);
        scales[..=natural]
            .iter()
            .rev()
            .find(|s| width(s) <= Scale::WIDEST)
            .or_else(|| scales.iter().rev().min_by_key(|s| width(s)))
            .copied()
            .unwrap_or(scales[0])
    }

    /// The longest number a column should need.
    const WIDEST: usize = 7;

    /// The unit's name (`ms`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `v` (in the input unit) as a number in this unit: `0.206`,
    /// `8,407`.
    pub fn number(&self, v: f64) -> String {
        amount(v / self.per)
    }

    /// `v` (in the input unit) in this unit, with its name: `0.206 ms`.
    pub fn format(&self, v: f64) -> String {
        if !v.is_finite() {
            return "–".into();
        }
        format!("{} {}", self.number(v), self.name)
    }
}

/// The unit a KiB amount reads best in: (KiB per unit, name).
fn unit(kib: f64) -> (f64, &'static str) {
    let a = kib.abs();
    if a >= 1024.0 * 1024.0 {
        (1024.0 * 1024.0, "GiB")
    } else if a >= 1024.0 {
        (1024.0, "MiB")
    } else if a >= 1.0 {
        (1.0, "KiB")
    } else {
        (1.0 / 1024.0, "B")
    }
}

/// An amount of memory given in KiB, for people: `410 B`, `1.1 KiB`,
/// `8.2 MiB`.
pub fn kib(v: f64) -> String {
    if v == 0.0 {
        return "0 B".into();
    }
    let (per, name) = unit(v);
    format!("{} {name}", sig3(v / per))
}

/// A count or rate with thousands separators (`284,113`).
pub fn format_count(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v.abs() >= 10f64.powi(*PLAIN.end() + 1) {
        return sig3(v);
    }
    let n = v.round() as i128;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Parses a byte size: `4096`, `16K`, `16KiB`, `1M`, `1MiB`, `1G` (binary
/// multiples; case does not matter).
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 4096, 16KiB, 1MiB)"))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("'{text}': unknown unit '{unit}' (use K, M or G)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// The longest duration any flag (or plan.json) may give, in seconds: a
/// year.
pub(crate) const MAX_SECONDS: f64 = 86_400.0 * 365.0;

/// Parses a duration: `10s`, `500ms`, `1.5s`, `2m`, `1h`, `250us`; a bare
/// number is seconds, at most [`MAX_SECONDS`].
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        u => {
            return Err(format!(
                "'{text}': unknown unit '{u}' (use us, ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || !(0.0..=MAX_SECONDS).contains(&secs) {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_past_any_measurement_are_written_as_they_are() {
        assert_eq!(format_count(1e300), "1.00e300");
        assert_eq!(format_count(-2.5e20), "-2.50e20");
        assert_eq!(sig3(1e300), "1.00e300");
        assert_eq!(sig3(3e-12), "3.00e-12");
        assert_eq!(amount(1e300), "1.00e300");
        assert_eq!(format_count(123_456_789_012.0), "123,456,789,012");
    }

    #[test]
    fn amounts_read_in_their_unit() {
        assert_eq!(kib(0.4), "410 B");
        assert_eq!(kib(1.1), "1.1 KiB");
        assert_eq!(kib(8200.0), "8.01 MiB");
        assert_eq!(kib(0.0), "0 B");
    }

    #[test]
    fn writes_numbers_for_people() {
        assert_eq!(sig3(0.012345), "0.0123");
        assert_eq!(sig3(1.5), "1.5");
        assert_eq!(sig3(380.0), "380");
        assert_eq!(sig3(12345.0), "12345");
        assert_eq!(sig3(-2.0), "-2");
        assert_eq!(count(1500.0), "1500");
        assert_eq!(count(100_000.0), "100k");
        assert_eq!(count(2_500_000.0), "2.5M");
        assert_eq!(seconds(0.00123), "1.23 ms");
        assert_eq!(seconds(2e-5), "20 µs");
        assert_eq!(seconds(3.0), "3 s");
        assert_eq!(Unit::Micros.format(1500.0), "1.5 ms");
        assert_eq!(Unit::Rate.format(25_000.0), "25k/s");
        assert_eq!(sig3(f64::NAN), "–");
    }

    #[test]
    fn a_column_reads_in_one_unit() {
        // The thesis's burst times: µs and ms in one column, all in ms.
        let times = [206e-6, 1.2e-3, 38.5e-3];
        let s = Scale::seconds(times);
        assert_eq!(s.name(), "ms");
        let text: Vec<String> = times.iter().map(|&t| s.format(t)).collect();
        assert_eq!(text, ["0.206 ms", "1.2 ms", "38.5 ms"]);
        // The verdict's CPU column: as short in µs as in ms, so ms.
        let s = Scale::micros([76.5, 54_600.0]);
        assert_eq!(
            (s.format(76.5).as_str(), s.format(54_600.0).as_str()),
            ("0.0765 ms", "54.6 ms")
        );
        assert_eq!(Scale::micros([0.5, 0.25]).format(0.5), "500 ns");
        assert_eq!(Scale::seconds([2.0, 0.5]).format(0.5), "0.5 s");
        assert_eq!(Scale::seconds([0.0]).format(0.0), "0 ns");
        // Memory: bytes and KiB together read in KiB.
        let s = Scale::kib([26.4, 0.0868, 105.0]);
        assert_eq!(s.format(0.0868), "0.0868 KiB");
        assert_eq!(s.number(105.0), "105");
        // MiB beside a few bytes: KiB, thousands separated, is shorter
        // than 0.00000821 MiB.
        let s = Scale::kib([8407.0, 0.00802]);
        assert_eq!(s.name(), "KiB");
        assert_eq!(s.format(8407.0), "8,407 KiB");
        assert_eq!(s.format(0.00802), "0.00802 KiB");
        assert_eq!(Scale::kib([0.08]).format(0.08), "81.9 B");
        assert_eq!(Scale::kib([8500.0, 9000.0]).format(8500.0), "8.3 MiB");
        // Nothing, or nothing finite: the smallest unit; never a panic.
        assert_eq!(Scale::seconds([]).name(), "ns");
        assert_eq!(Scale::kib([f64::NAN, 2.0]).name(), "KiB");
        assert_eq!(Scale::kib([2.0]).format(f64::INFINITY), "–");
        // Negative values are written with their sign, in the same unit.
        assert_eq!(Scale::kib([-2048.0]).name(), "MiB");
    }
}
