//! Sizes and durations as users write them: `"900MB"`, `"4KiB"`, `4096`, `"10us"`, `"1.5ms"`.
//!
//! Sizes use the kernel's convention (`mem=900M`, `/proc/meminfo` kB): K, M, G, T and their
//! `B`/`iB` spellings are all powers of 1024. A bare integer is bytes. Durations take
//! ns, us, ms, s; a bare integer is nanoseconds. Also the kernel's unit of time, the jiffy.

use serde::de::{self, Deserializer, Visitor};

/// HZ of the modelled kernel (CONFIG_HZ=250, Debian's default): one jiffy is 4 ms.
pub const JIFFY_NS: u64 = 4_000_000;
use std::fmt;

/// Parses a size into bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "page" | "pages" => 4096,
        _ => return Err(format!("expected a size such as \"900MB\", \"4KiB\" or 4096, got \"{s}\"")),
    };
    if num.is_empty() {
        return Err(format!("expected a size such as \"900MB\", \"4KiB\" or 4096, got \"{s}\""));
    }
    let v: f64 = num.parse().map_err(|_| format!("expected a size such as \"900MB\", got \"{s}\""))?;
    let bytes = v * mult as f64;
    if !(0.0..1.8e19).contains(&bytes) {
        return Err(format!("size \"{s}\" is out of range"));
    }
    Ok(bytes.round() as u64)
}

/// A byte count for messages: "512 B", "3.0 MiB", "6.5 GiB", "1.0 TiB".
pub fn format_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Parses a duration into nanoseconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: f64 = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("expected a duration such as \"10us\", \"2ms\" or 500 (ns), got \"{s}\"")),
    };
    let v: f64 =
        num.parse().map_err(|_| format!("expected a duration such as \"10us\", \"2ms\" or 500 (ns), got \"{s}\""))?;
    let ns = v * mult;
    if !(0.0..1.8e19).contains(&ns) {
        return Err(format!("duration \"{s}\" is out of range"));
    }
    Ok(ns.round() as u64)
}

struct UnitVisitor {
    what: &'static str,
    parse: fn(&str) -> Result<u64, String>,
}

impl<'de> Visitor<'de> for UnitVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("expected {}, got the negative number {v}", self.what)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v >= 0.0 && v.is_finite() {
            Ok(v.round() as u64)
        } else {
            Err(E::custom(format!("expected {}, got {v}", self.what)))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        if v.trim_start().starts_with('-') {
            return Err(E::custom(format!("expected {}, got the negative value \"{v}\"", self.what)));
        }
        (self.parse)(v).map_err(E::custom)
    }
}

/// serde helper: a size in bytes (integer or string with a unit).
pub fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(UnitVisitor { what: "a size (bytes, or a string like \"900MB\")", parse: parse_bytes })
}

/// serde helper: a duration in nanoseconds (integer or string with a unit).
pub fn de_duration_ns<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(UnitVisitor {
        what: "a duration (nanoseconds, or a string like \"10us\")",
        parse: parse_duration_ns,
    })
}

/// serde helper for `Option<u64>` sizes.
pub fn de_opt_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    de_bytes(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary_multiples() {
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("900MB").unwrap(), 900 << 20);
        assert_eq!(parse_bytes("1G").unwrap(), 1 << 30);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("12345").unwrap(), 12345);
        assert_eq!(parse_bytes("2 pages").unwrap(), 8192);
    }

    #[test]
    fn bad_sizes_are_rejected_with_the_input_named() {
        let e = parse_bytes("12 parsecs").unwrap_err();
        assert!(e.contains("12 parsecs"), "{e}");
        assert!(parse_bytes("MB").is_err());
        assert!(parse_bytes("1.2.3MB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("10us").unwrap(), 10_000);
        assert_eq!(parse_duration_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_duration_ns("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration_ns("7").unwrap(), 7);
        assert!(parse_duration_ns("3 fortnights").is_err());
    }
}
