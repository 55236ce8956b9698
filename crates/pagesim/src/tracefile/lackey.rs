//! valgrind lackey's `--trace-mem=yes` text: `I  addr,size` (an instruction fetch), ` L`,
//! ` S`, ` M` `addr,size` (a load, a store, a modify: load then store, one record), the
//! address in hex, the size in bytes; an access across a page boundary touches both pages.
//! valgrind's own lines (`==PID== ...`) and `--trace-syscalls=yes` lines (`SYSCALL[...]`)
//! are skipped. Lackey has no time: a record's time is its number.

use super::{Format, Input, Op, Reader, Ref, TraceError};

pub const FORMAT: Format = Format {
    name: "lackey",
    about: "valgrind --tool=lackey --trace-mem=yes text (I, L, S, M records)",
    open: |input| Box::new(Lackey { input, n: 0 }),
};

struct Lackey {
    input: Input,
    n: u64,
}

impl Reader for Lackey {
    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError> {
        loop {
            if !self.input.next_line()? {
                return Ok(None);
            }
            let l = self.input.text.as_str();
            if l.is_empty() || l.starts_with("==") || l.starts_with("SYSCALL") {
                continue;
            }
            let bad = |what: &str| self.input.error_here(format!("{what}, got \"{l}\""));
            let (kind, rest) = match l.trim_start().split_once(char::is_whitespace) {
                Some((k, r)) => (k, r.trim()),
                None => return Err(bad("expected I, L, S or M then addr,size")),
            };
            let op = match kind {
                "I" | "L" => Op::Read,
                "S" | "M" => Op::Write,
                _ => return Err(bad("expected I, L, S or M then addr,size")),
            };
            let Some((addr, size)) = rest.split_once(',') else { return Err(bad("expected addr,size")) };
            let addr = u64::from_str_radix(addr.trim(), 16).map_err(|_| bad("the address is not hexadecimal"))?;
            let size: u64 = size.trim().parse().map_err(|_| bad("the size is not a number"))?;
            self.n += 1;
            return Ok(Some(Ref::bytes(self.n - 1, op, 0, addr, size)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, file};
    use super::super::Op;

    #[test]
    fn accesses_become_pages_and_valgrinds_lines_are_skipped() {
        let text = b"==123== Lackey\nI  04019180,7\n L 1ffefffd78,8\n S 0000fff,2\n M 5000,4\n==123== done\n";
        let refs = all(&file("l.lackey", text), "lackey").unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.time_ns, r.op, r.page, r.pages)).collect();
        assert_eq!(
            got,
            [(0, Op::Read, 0x4019, 1), (1, Op::Read, 0x1ffefff, 1), (2, Op::Write, 0, 2), (3, Op::Write, 5, 1)]
        );
    }

    #[test]
    fn a_line_that_is_no_access_is_named() {
        let e = all(&file("l.lackey", b"I  1000,4\n X 1000,4\n"), "lackey").unwrap_err();
        assert!(e.to_string().contains("l.lackey: record 2: expected I, L, S or M"), "{e}");
        let e = all(&file("l.lackey", b" L zz,4\n"), "lackey").unwrap_err();
        assert!(e.to_string().contains("record 1: the address is not hexadecimal"), "{e}");
    }
}
