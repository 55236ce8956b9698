//! blkparse's default text output: `maj,min cpu seq sec.nsec pid action rwbs sector +
//! nblocks [comm]`. The requests as the file system queued them (action `Q`) with `R` or
//! `W` in their rwbs are read (sector and block counts in 512-byte units); the other
//! actions of a request's life (merges, issues, completions, plugs) are skipped, and so is
//! blkparse's summary after the events (from its first line that is not an event). Each
//! device is a space of its own (numbered as they first appear).

use super::{Format, Input, Op, Reader, Ref, TraceError};
use std::collections::HashMap;

pub const FORMAT: Format = Format {
    name: "blkparse",
    about: "blkparse text output (queued requests: maj,min cpu seq time pid Q rwbs sector + n)",
    open: |input| Box::new(Blkparse { input, first: None, devs: HashMap::new(), done: false }),
};

struct Blkparse {
    input: Input,
    first: Option<u64>,
    devs: HashMap<String, u64>,
    done: bool,
}

impl Reader for Blkparse {
    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError> {
        while !self.done {
            if !self.input.next_line()? {
                return Ok(None);
            }
            let f: Vec<&str> = self.input.text.split_whitespace().collect();
            let Some(dev) = f.first().filter(|d| d.split_once(',').is_some_and(|(a, b)| is_num(a) && is_num(b))) else {
                // blkparse's per-CPU and total summary follows the events.
                self.done = !f.is_empty();
                continue;
            };
            let bad = |what: &str| self.input.error_here(format!("{what}, got \"{}\"", self.input.text));
            if f.len() < 7 {
                return Err(bad("expected maj,min cpu seq sec.nsec pid action rwbs ..."));
            }
            if f[5] != "Q" {
                continue;
            }
            let op = if f[6].contains('W') {
                Op::Write
            } else if f[6].contains('R') {
                Op::Read
            } else {
                continue; // a flush or discard carries no data
            };
            if f.len() < 10 || f[8] != "+" {
                return Err(bad("expected sector + nblocks after the rwbs"));
            }
            let (Ok(sector), Ok(n)) = (f[7].parse::<u64>(), f[9].parse::<u64>()) else {
                return Err(bad("the sector and the block count are numbers"));
            };
            let time = parse_time(f[3]).ok_or_else(|| bad("the time is sec.nsec"))?;
            let first = *self.first.get_or_insert(time);
            let dt = time.saturating_sub(first);
            let id = self.devs.len() as u64;
            let space = *self.devs.entry(dev.to_string()).or_insert(id);
            return Ok(Some(Ref::bytes(dt, op, space, sector * 512, n * 512)));
        }
        Ok(None)
    }
}

fn is_num(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `sec.nsec` in ns.
fn parse_time(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, "0"));
    let ns: u64 = format!("{frac:0<9}").get(..9)?.parse().ok()?;
    sec.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(ns)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, file};
    use super::super::Op;

    #[test]
    fn queued_requests_are_read_and_the_rest_skipped() {
        let text = b"  8,0    3        1     0.000000000   697  Q  WS 3414816 + 8 [jbd2/sda3-8]\n\
                       8,0    3        2     0.000001000   697  G  WS 3414816 + 8 [jbd2/sda3-8]\n\
                       8,0    3        3     0.000002000   697  P   N [jbd2/sda3-8]\n\
                       8,16   0        4     0.500000000   700  Q   R 16 + 16 [cat]\n\
                       8,0    0        5     0.600000000   700  Q  FN [kworker]\n\
                     CPU0 (sda):\n Reads Queued: 1, 8KiB\n";
        let refs = all(&file("b.blkparse", text), "blkparse").unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.time_ns, r.op, r.space, r.page, r.pages)).collect();
        assert_eq!(got, [(0, Op::Write, 0, 3414816 / 8, 1), (500_000_000, Op::Read, 1, 2, 2)]);
    }

    #[test]
    fn a_queued_request_without_its_sectors_is_named() {
        let e = all(&file("b.blkparse", b"8,0 3 1 0.1 697 Q W 100 8 [x]\n"), "blkparse").unwrap_err();
        assert!(e.to_string().contains("b.blkparse: record 1: expected sector + nblocks"), "{e}");
    }
}
