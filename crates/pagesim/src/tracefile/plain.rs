//! pagesim's plain text trace: one record a line, `time,op,page` (time in ns, op `r` or `w`
//! (or `read`, `write`), page number decimal or `0x` hex), optionally `,pages` after it; a
//! first line that is not a record (a header) and lines starting with `#` are skipped.

use super::{number, Format, Input, Op, Reader, Ref, TraceError};

pub const FORMAT: Format = Format {
    name: "plain",
    about: "text, one record a line: time_ns,op(r|w),page[,pages]",
    open: |input| Box::new(Plain { input }),
};

struct Plain {
    input: Input,
}

impl Reader for Plain {
    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError> {
        loop {
            if !self.input.next_line()? {
                return Ok(None);
            }
            let l = self.input.text.trim();
            if l.is_empty()
                || l.starts_with('#')
                || (self.input.line == 1 && !l.starts_with(|c: char| c.is_ascii_digit()))
            {
                continue;
            }
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if !(3..=4).contains(&f.len()) {
                return Err(self.input.error_here(format!("expected time,op,page[,pages], got \"{l}\"")));
            }
            let time =
                number(f[0]).ok_or_else(|| self.input.error_here(format!("time \"{}\" is not a number", f[0])))?;
            let op = match f[1] {
                "r" | "R" | "read" => Op::Read,
                "w" | "W" | "write" => Op::Write,
                o => return Err(self.input.error_here(format!("op \"{o}\": expected r or w"))),
            };
            let page =
                number(f[2]).ok_or_else(|| self.input.error_here(format!("page \"{}\" is not a number", f[2])))?;
            let pages = match f.get(3) {
                None => 1,
                Some(p) => number(p)
                    .filter(|&n| (1..=u32::MAX as u64).contains(&n))
                    .ok_or_else(|| self.input.error_here(format!("pages \"{p}\": expected 1 or more")))?
                    as u32,
            };
            return Ok(Some(Ref { time_ns: time, op, space: 0, page, pages }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, file};
    use super::super::Op;

    #[test]
    fn lines_become_references_after_a_header() {
        let refs = all(&file("p.csv", b"time,op,page\n0,r,10\n# a comment\n5,w,0x20,4\n"), "plain").unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.time_ns, r.op, r.page, r.pages)).collect();
        assert_eq!(got, [(0, Op::Read, 10, 1), (5, Op::Write, 32, 4)]);
    }

    #[test]
    fn a_bad_line_is_named() {
        let e = all(&file("p.csv", b"0,r,10\n1,x,11\n"), "plain").unwrap_err();
        assert!(e.to_string().ends_with("p.csv: record 2: op \"x\": expected r or w"), "{e}");
        let e = all(&file("p.csv", b"0,r\n"), "plain").unwrap_err();
        assert!(e.to_string().contains("record 1: expected time,op,page"), "{e}");
    }
}
