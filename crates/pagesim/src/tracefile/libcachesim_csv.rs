//! libCacheSim's csv object traces as its data files ship them (`twitter_cluster52.csv`):
//! a `#` header line, then `time, object, size[, next_access_vtime]` per line (time in
//! seconds, the object id a number, its size in bytes). An object is a space of its own,
//! its bytes split into pages; every request reads.

use super::{number, Format, Input, Op, Reader, Ref, TraceError};

pub const FORMAT: Format = Format {
    name: "libcachesim-csv",
    about: "libCacheSim csv object trace (# header; time, object, size[, next_access_vtime])",
    open: |input| Box::new(Csv { input, first: None }),
};

struct Csv {
    input: Input,
    first: Option<u64>,
}

impl Reader for Csv {
    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError> {
        loop {
            if !self.input.next_line()? {
                return Ok(None);
            }
            let l = self.input.text.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if !(3..=4).contains(&f.len()) {
                return Err(self.input.error_here(format!("expected time, object, size[, next], got \"{l}\"")));
            }
            let field = |i: usize, name: &str| {
                number(f[i]).ok_or_else(|| self.input.error_here(format!("{name} \"{}\" is not a number", f[i])))
            };
            let (time, obj, size) = (field(0, "time")?, field(1, "object")?, field(2, "size")?);
            let first = *self.first.get_or_insert(time);
            let Some(dt) = time.checked_sub(first) else {
                return Err(self.input.error_here(format!("time {time} goes back before the first record's {first}")));
            };
            return Ok(Some(Ref::bytes(dt.saturating_mul(1_000_000_000), Op::Read, obj, 0, size)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, file};

    #[test]
    fn objects_become_their_pages() {
        let text = b"# time, object, size, next_access_vtime\n0, 12, 100, 3\n2, 13, 9000, -1\n";
        let refs = all(&file("t.csv", text), "libcachesim-csv").unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.time_ns, r.space, r.pages)).collect();
        assert_eq!(got, [(0, 12, 1), (2_000_000_000, 13, 3)]);
    }

    #[test]
    fn a_bad_object_is_named() {
        let e = all(&file("t.csv", b"# h\n0, 12, 100\n1, x, 5\n"), "libcachesim-csv").unwrap_err();
        assert!(e.to_string().ends_with("t.csv: record 3: object \"x\" is not a number"), "{e}");
    }
}
