//! MSR Cambridge block traces (SNIA IOTTA), CSV:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`: Windows FILETIME (100 ns
//! ticks), `Read` or `Write`, byte offset and size. Each host's disk is a space of its own
//! (numbered as they first appear).

use super::{Format, Input, Op, Reader, Ref, TraceError};
use std::collections::HashMap;

pub const FORMAT: Format = Format {
    name: "msr",
    about: "MSR Cambridge block trace CSV (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime)",
    open: |input| Box::new(Msr { input, first: None, disks: HashMap::new() }),
};

struct Msr {
    input: Input,
    first: Option<u64>,
    disks: HashMap<(String, String), u64>,
}

impl Reader for Msr {
    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError> {
        loop {
            if !self.input.next_line()? {
                return Ok(None);
            }
            let l = self.input.text.trim();
            if l.is_empty() || (self.input.line == 1 && l.starts_with("Timestamp")) {
                continue;
            }
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            let bad = |what: String| self.input.error_here(what);
            if f.len() != 7 {
                return Err(bad(format!(
                    "expected 7 fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), got {}",
                    f.len()
                )));
            }
            let num = |i: usize, name: &str| {
                f[i].parse::<u64>().map_err(|_| bad(format!("{name} \"{}\" is not a number", f[i])))
            };
            let ticks = num(0, "Timestamp")?;
            let op = match f[3] {
                "Read" | "read" => Op::Read,
                "Write" | "write" => Op::Write,
                t => return Err(bad(format!("Type \"{t}\": expected Read or Write"))),
            };
            let (offset, size) = (num(4, "Offset")?, num(5, "Size")?);
            let first = *self.first.get_or_insert(ticks);
            let Some(dt) = ticks.checked_sub(first) else {
                return Err(bad(format!("Timestamp {ticks} goes back before the first record's {first}")));
            };
            let n = self.disks.len() as u64;
            let space = *self.disks.entry((f[1].to_string(), f[2].to_string())).or_insert(n);
            return Ok(Some(Ref::bytes(dt.saturating_mul(100), op, space, offset, size)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, file};
    use super::super::Op;

    #[test]
    fn requests_become_the_pages_of_each_disk() {
        let text = b"128166372003061629,hm,0,Read,8192,12288,1000\n128166372003071629,hm,1,Write,0,512,90\n\
                     128166372003081629,hm,0,Write,4096,4096,80\n";
        let refs = all(&file("hm_0.csv", text), "msr").unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.time_ns, r.op, r.space, r.page, r.pages)).collect();
        assert_eq!(got, [(0, Op::Read, 0, 2, 3), (1_000_000, Op::Write, 1, 0, 1), (2_000_000, Op::Write, 0, 1, 1)]);
    }

    #[test]
    fn a_bad_record_is_named() {
        let e = all(&file("hm_0.csv", b"1,hm,0,Read,0,512,1\n2,hm,0,Trim,0,512,1\n"), "msr").unwrap_err();
        assert!(e.to_string().ends_with("hm_0.csv: record 2: Type \"Trim\": expected Read or Write"), "{e}");
    }
}
