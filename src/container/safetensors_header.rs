//! The safetensors header read in place: no allocation, no recursion, nothing copied. Readers
//! that must not allocate (the C ABI) find through it the tensors that a container keeps in runs
//! of verbatim bytes (FORMAT.md 9.6) and so have no index entry of their own.
//!
//! It accepts exactly the headers that `checkpoint::safetensors::parse` (serde_json, used when
//! compressing, for its detailed messages) accepts, and reads the same tensors from them: JSON
//! as serde_json reads it (nesting below 128 levels, UTF-8, no lone surrogates, the last of two
//! equal keys wins), then the checks of FORMAT.md 9.6. The `safetensors_header` fuzz target
//! holds the two readers to that. What needs memory is left to the caller: which of two equal
//! top-level keys is the last one, and whether two tensors overlap.

use core::cmp::Ordering;

use super::MAX_RANK;

/// Largest header the safetensors format allows (its reference implementation's limit).
pub const MAX_HEADER: u64 = 100_000_000;

/// serde_json refuses JSON nested this deep or deeper.
const MAX_DEPTH: u32 = 128;

/// The bytes are not a safetensors header, or a member of it is not a valid tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotSafetensors;

/// Bytes per element of the safetensors dtypes whose size is fixed.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 1,
        "I16" | "U16" | "F16" | "BF16" => 2,
        "I32" | "U32" | "F32" => 4,
        "I64" | "U64" | "F64" => 8,
        _ => return None,
    })
}

/// A JSON string of the header as written: the bytes between its quotes, escapes unresolved
/// (the header was checked, so they are valid).
#[derive(Clone, Copy, Debug)]
pub struct JsonStr<'a> {
    raw: &'a [u8],
}

impl<'a> JsonStr<'a> {
    /// The empty string.
    pub const EMPTY: JsonStr<'static> = JsonStr { raw: b"" };

    /// The bytes between the quotes.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The text, when it has no escapes (it is then the raw bytes).
    pub fn plain(&self) -> Option<&'a str> {
        if self.raw.contains(&b'\\') {
            return None;
        }
        core::str::from_utf8(self.raw).ok()
    }

    /// The UTF-8 bytes of the text, escapes resolved.
    pub fn bytes(&self) -> Unescaped<'a> {
        Unescaped {
            raw: self.raw,
            at: 0,
            buf: [0; 4],
            buf_at: 0,
            buf_len: 0,
        }
    }

    /// The length in bytes of the text, escapes resolved.
    pub fn len(&self) -> usize {
        match self.plain() {
            Some(s) => s.len(),
            None => self.bytes().count(),
        }
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Whether the text is `text`.
    pub fn is(&self, text: &[u8]) -> bool {
        match self.plain() {
            Some(s) => s.as_bytes() == text,
            None => self.bytes().eq(text.iter().copied()),
        }
    }

    /// Compares the texts byte by byte (the order of Rust's `str`).
    pub fn cmp_text(&self, other: &JsonStr<'_>) -> Ordering {
        match (self.plain(), other.plain()) {
            (Some(a), Some(b)) => a.cmp(b),
            _ => self.bytes().cmp(other.bytes()),
        }
    }
}

/// The bytes of a [`JsonStr`]'s text.
#[derive(Clone, Debug)]
pub struct Unescaped<'a> {
    raw: &'a [u8],
    at: usize,
    buf: [u8; 4],
    buf_at: u8,
    buf_len: u8,
}

impl Iterator for Unescaped<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        if self.buf_at < self.buf_len {
            let b = self.buf[self.buf_at as usize];
            self.buf_at += 1;
            return Some(b);
        }
        let &b = self.raw.get(self.at)?;
        if b != b'\\' {
            self.at += 1;
            return Some(b);
        }
        let (c, used) = escape_at(self.raw, self.at)?;
        self.at += used;
        let n = c.encode_utf8(&mut self.buf).len();
        self.buf_at = 1;
        self.buf_len = n as u8;
        Some(self.buf[0])
    }
}

/// The character of the escape at `raw[at]` (a backslash) and the bytes it takes; `None` where
/// it is not a valid escape.
fn escape_at(raw: &[u8], at: usize) -> Option<(char, usize)> {
    let c = match *raw.get(at + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(raw.get(at + 2..at + 6)?)?;
            if (0xdc00..0xe000).contains(&hi) {
                return None;
            }
            if !(0xd800..0xdc00).contains(&hi) {
                return Some((char::from_u32(hi)?, 6));
            }
            if raw.get(at + 6..at + 8)? != b"\\u" {
                return None;
            }
            let lo = hex4(raw.get(at + 8..at + 12)?)?;
            if !(0xdc00..0xe000).contains(&lo) {
                return None;
            }
            let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
            return Some((char::from_u32(c)?, 12));
        }
        _ => return None,
    };
    Some((c, 2))
}

fn hex4(h: &[u8]) -> Option<u32> {
    h.iter()
        .try_fold(0u32, |v, &d| Some(v * 16 + (d as char).to_digit(16)?))
}

/// A checked safetensors header: the JSON object after the 8-byte length.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    json: &'a [u8],
    data_len: u64,
}

impl<'a> Header<'a> {
    /// The header at the start of a safetensors file of `file_len` bytes, of which `prefix` (its
    /// start, the header at least) is at hand: its length checked against both, its JSON checked
    /// whole, and an object.
    pub fn parse(prefix: &'a [u8], file_len: u64) -> Result<Header<'a>, NotSafetensors> {
        let n = prefix
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
            .ok_or(NotSafetensors)?;
        let have = prefix.len() as u64 - 8;
        if n > MAX_HEADER || n > have || n > file_len.saturating_sub(8) || file_len < 8 {
            return Err(NotSafetensors);
        }
        let json = &prefix[8..8 + n as usize];
        if core::str::from_utf8(json).is_err() || !valid_json(json) {
            return Err(NotSafetensors);
        }
        if json[skip_ws(json, 0)] != b'{' {
            return Err(NotSafetensors);
        }
        Ok(Header {
            json,
            data_len: file_len - 8 - n,
        })
    }

    /// Where the data starts in the file: tensor ranges count from there.
    pub fn data_start(&self) -> u64 {
        8 + self.json.len() as u64
    }

    /// The members of the object, in the order written (equal keys included).
    pub fn members(&self) -> Members<'a> {
        Members {
            json: self.json,
            at: skip_ws(self.json, 0) + 1,
        }
    }

    /// The member whose key starts at `key_at` (a [`Member::key_at`] of this header).
    pub fn member_at(&self, key_at: usize) -> Option<Member<'a>> {
        if self.json.get(key_at) != Some(&b'"') {
            return None;
        }
        Members {
            json: self.json,
            at: key_at,
        }
        .next()
    }

    /// The key of the member whose key starts at `key_at`, without reading its value.
    pub fn key_at(&self, key_at: usize) -> Option<JsonStr<'a>> {
        if self.json.get(key_at) != Some(&b'"') {
            return None;
        }
        let end = string_end(self.json, key_at)?;
        Some(JsonStr {
            raw: &self.json[key_at + 1..end - 1],
        })
    }

    /// The tensor that `member` describes (absolute file range), `None` for a valid
    /// `__metadata__`, or why it is neither.
    pub fn tensor(&self, member: &Member<'a>) -> Result<Option<Tensor<'a>>, NotSafetensors> {
        let value = member.value;
        if member.key.is(b"__metadata__") {
            return match value.first() {
                Some(b'{') => Ok(None),
                _ => Err(NotSafetensors),
            };
        }
        if value.first() != Some(&b'{') {
            return Err(NotSafetensors);
        }
        let (mut dtype, mut shape, mut offsets) = (None, None, None);
        for field in (Members { json: value, at: 1 }) {
            let k = field.key;
            if k.is(b"dtype") {
                dtype = Some(field.value);
            } else if k.is(b"shape") {
                shape = Some(field.value);
            } else if k.is(b"data_offsets") {
                offsets = Some(field.value);
            }
        }
        let dtype = dtype.and_then(string_value).filter(|d| !d.is_empty());
        let shape = shape.and_then(Dims::of);
        let offsets = offsets.and_then(Dims::of);
        let (Some(dtype), Some(shape), Some(mut offsets)) = (dtype, shape, offsets) else {
            return Err(NotSafetensors);
        };
        let (Some(begin), Some(end), None) = (offsets.next(), offsets.next(), offsets.next())
        else {
            return Err(NotSafetensors);
        };
        if begin > end || end > self.data_len || shape.len() > MAX_RANK {
            return Err(NotSafetensors);
        }
        let mut name = [0u8; 8];
        let size = if dtype.len() <= name.len() {
            for (d, b) in name.iter_mut().zip(dtype.bytes()) {
                *d = b;
            }
            core::str::from_utf8(&name[..dtype.len()])
                .ok()
                .and_then(dtype_size)
        } else {
            None
        };
        if let Some(size) = size {
            let numel = shape
                .clone()
                .try_fold(1u64, |a, d| a.checked_mul(d))
                .and_then(|n| n.checked_mul(size));
            if numel != Some(end - begin) {
                return Err(NotSafetensors);
            }
        }
        Ok(Some(Tensor {
            dtype,
            shape,
            start: self.data_start() + begin,
            end: self.data_start() + end,
        }))
    }
}

/// A tensor of the header: its dtype name, shape and byte range in the file.
#[derive(Clone, Debug)]
pub struct Tensor<'a> {
    /// The dtype name as written.
    pub dtype: JsonStr<'a>,
    /// The dimensions.
    pub shape: Dims<'a>,
    /// Start of its bytes in the file.
    pub start: u64,
    /// End of its bytes (exclusive).
    pub end: u64,
}

/// One `"key": value` of an object.
#[derive(Clone, Copy, Debug)]
pub struct Member<'a> {
    /// The key.
    pub key: JsonStr<'a>,
    /// Where the key's opening quote is in the JSON ([`Header::member_at`]).
    pub key_at: usize,
    value: &'a [u8],
}

/// The members of a checked object, from just after its `{` (or a member's key).
#[derive(Clone, Debug)]
pub struct Members<'a> {
    json: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        let j = self.json;
        let key_at = skip_ws(j, self.at);
        if j.get(key_at) != Some(&b'"') {
            self.at = j.len();
            return None;
        }
        let key_end = string_end(j, key_at)?;
        let colon = skip_ws(j, key_end);
        let value_at = skip_ws(j, colon + 1);
        let value_end = value_end(j, value_at)?;
        let next = skip_ws(j, value_end);
        self.at = if j.get(next) == Some(&b',') {
            next + 1
        } else {
            j.len()
        };
        Some(Member {
            key: JsonStr {
                raw: &j[key_at + 1..key_end - 1],
            },
            key_at,
            value: &j[value_at..value_end],
        })
    }
}

/// The non-negative integers of a checked JSON array (none where one is
/// not such an integer, as serde_json's `as_u64`).
#[derive(Clone, Debug)]
pub struct Dims<'a> {
    raw: &'a [u8],
    at: usize,
    len: usize,
}

impl<'a> Dims<'a> {
    fn of(value: &'a [u8]) -> Option<Dims<'a>> {
        if value.first() != Some(&b'[') {
            return None;
        }
        let dims = Dims {
            raw: value,
            at: 1,
            len: 0,
        };
        let mut len = 0;
        let mut probe = dims.clone();
        while probe.at < value.len() {
            let start = skip_ws(value, probe.at);
            if value.get(start) == Some(&b']') {
                break;
            }
            probe.next_checked()?;
            len += 1;
        }
        Some(Dims { len, ..dims })
    }

    /// The next number, `None` past the end or where it is not a non-negative integer that
    /// fits 64 bits.
    fn next_checked(&mut self) -> Option<u64> {
        let v = self.raw;
        let start = skip_ws(v, self.at);
        let mut end = start;
        let mut n = 0u64;
        while let Some(d @ b'0'..=b'9') = v.get(end) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            end += 1;
        }
        if end == start {
            return None;
        }
        let after = skip_ws(v, end);
        match v.get(after) {
            Some(b',') => self.at = after + 1,
            Some(b']') => self.at = v.len(),
            _ => return None,
        }
        Some(n)
    }

    /// The number of dimensions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Iterator for Dims<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        self.next_checked()
    }
}

/// The string a value is, if it is one.
fn string_value(value: &[u8]) -> Option<JsonStr<'_>> {
    match value {
        [b'"', inner @ .., b'"'] => Some(JsonStr { raw: inner }),
        _ => None,
    }
}

fn skip_ws(j: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = j.get(at) {
        at += 1;
    }
    at
}

/// The end (just past the closing quote) of the string whose opening quote is at `at`, its
/// escapes and characters checked as serde_json checks them.
fn string_end(j: &[u8], at: usize) -> Option<usize> {
    let mut p = at + 1;
    loop {
        match *j.get(p)? {
            b'"' => return Some(p + 1),
            b'\\' => p += escape_at(j, p)?.1,
            0..=0x1f => return None,
            _ => p += 1,
        }
    }
}

/// The end of the number at `at`, in JSON's grammar.
fn number_end(j: &[u8], at: usize) -> Option<usize> {
    let digits = |mut p: usize| {
        let s = p;
        while let Some(b'0'..=b'9') = j.get(p) {
            p += 1;
        }
        (p > s).then_some(p)
    };
    let mut p = at + usize::from(j.get(at) == Some(&b'-'));
    p = match j.get(p)? {
        b'0' => p + 1,
        b'1'..=b'9' => digits(p)?,
        _ => return None,
    };
    if j.get(p) == Some(&b'.') {
        p = digits(p + 1)?;
    }
    if let Some(b'e' | b'E') = j.get(p) {
        p += 1;
        if let Some(b'+' | b'-') = j.get(p) {
            p += 1;
        }
        p = digits(p)?;
    }
    Some(p)
}

/// The end of the scalar (string, number, literal) at `at`.
fn scalar_end(j: &[u8], at: usize) -> Option<usize> {
    match *j.get(at)? {
        b'"' => string_end(j, at),
        b'-' | b'0'..=b'9' => number_end(j, at),
        _ => [&b"true"[..], b"false", b"null"]
            .into_iter()
            .find(|l| j[at..].starts_with(l))
            .map(|l| at + l.len()),
    }
}

/// The end of the (checked) value at `at`.
fn value_end(j: &[u8], at: usize) -> Option<usize> {
    if !matches!(j.get(at)?, b'{' | b'[') {
        return scalar_end(j, at);
    }
    let mut depth = 0u32;
    let mut p = at;
    loop {
        match *j.get(p)? {
            b'{' | b'[' => {
                depth += 1;
                p += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                p += 1;
                if depth == 0 {
                    return Some(p);
                }
            }
            b'"' => p = string_end(j, p)?,
            _ => p += 1,
        }
    }
}

/// Whether `j` is one JSON value (and whitespace) that serde_json reads: iteratively, a bit per
/// open container saying whether it is an object.
fn valid_json(j: &[u8]) -> bool {
    let mut objects = 0u128;
    let mut depth = 0u32;
    let mut p = skip_ws(j, 0);
    'value: loop {
        // A value starts at p.
        match j.get(p) {
            Some(&open @ (b'{' | b'[')) => {
                depth += 1;
                if depth >= MAX_DEPTH {
                    return false;
                }
                let object = open == b'{';
                objects = (objects << 1) | u128::from(object);
                p = skip_ws(j, p + 1);
                let close = if object { b'}' } else { b']' };
                if j.get(p) == Some(&close) {
                    p += 1;
                    depth -= 1;
                    objects >>= 1;
                } else {
                    if object {
                        let Some(q) = key_end(j, p) else { return false };
                        p = q;
                    }
                    continue 'value;
                }
            }
            Some(_) => match scalar_end(j, p) {
                Some(q) => p = q,
                None => return false,
            },
            None => return false,
        }
        // After a value: close containers, or go on to the next element.
        loop {
            p = skip_ws(j, p);
            if depth == 0 {
                return p == j.len();
            }
            let object = objects & 1 == 1;
            match j.get(p) {
                Some(b',') => {
                    p = skip_ws(j, p + 1);
                    if object {
                        let Some(q) = key_end(j, p) else { return false };
                        p = q;
                    }
                    continue 'value;
                }
                Some(b'}') if object => {}
                Some(b']') if !object => {}
                _ => return false,
            }
            p += 1;
            depth -= 1;
            objects >>= 1;
        }
    }
}

/// Past `"key" :` and the whitespace after it, from the key's quote at `at`.
fn key_end(j: &[u8], at: usize) -> Option<usize> {
    if j.get(at) != Some(&b'"') {
        return None;
    }
    let p = skip_ws(j, string_end(j, at)?);
    (j.get(p) == Some(&b':')).then(|| skip_ws(j, p + 1))
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    fn file(json: &str, data: usize) -> std::vec::Vec<u8> {
        let mut f = (json.len() as u64).to_le_bytes().to_vec();
        f.extend_from_slice(json.as_bytes());
        f.resize(f.len() + data, 0);
        f
    }

    fn accepts(json: &str) -> bool {
        valid_json(json.as_bytes())
    }

    #[test]
    fn json_as_serde_reads_it() {
        for ok in [
            "{}",
            " { \"a\" : [1, -2.5e+3, true, false, null, \"x\\u00e9\\ud83d\\ude00\"] } \r\n",
            "[[[]]]",
            "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
            "0",
            "-0.0E-0",
        ] {
            assert!(accepts(ok), "{ok}");
        }
        for bad in [
            "",
            "{",
            "}",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:2}",
            "[01]",
            "[1.]",
            "[.5]",
            "[-]",
            "[1e]",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"\\x\"",
            "\"a\nb\"",
            "[1] [2]",
            "[tru]",
            "[1}",
            "{\"a\":1]",
            "nul",
        ] {
            assert!(!accepts(bad), "{bad:?}");
        }
        let nest = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(accepts(&nest(127)));
        assert!(!accepts(&nest(128)));
    }

    #[test]
    fn tensors_and_their_checks() {
        let json = r#"{"__metadata__":{"k":"v"},"a\u00e9":{"dtype":"F32","shape":[2, 3],"data_offsets":[0,24]},
            "b":{"shape":[1],"dtype":"BF16","data_offsets":[24,26],"extra":[{}]}}"#;
        let f = file(json, 26);
        let h = Header::parse(&f, f.len() as u64).unwrap();
        let members: std::vec::Vec<_> = h.members().collect();
        assert_eq!(members.len(), 3);
        assert!(h.tensor(&members[0]).unwrap().is_none());
        let a = h.tensor(&members[1]).unwrap().unwrap();
        assert!(members[1].key.is("aé".as_bytes()));
        assert_eq!(members[1].key.len(), 3);
        assert_eq!(a.dtype.plain(), Some("F32"));
        assert_eq!(a.shape.clone().collect::<std::vec::Vec<_>>(), [2, 3]);
        assert_eq!((a.start, a.end), (h.data_start(), h.data_start() + 24));
        let b = h.member_at(members[2].key_at).unwrap();
        assert!(b.key.is(b"b"));
        assert_eq!(h.tensor(&b).unwrap().unwrap().end, h.data_start() + 26);
        // Sizes, ranges and types are checked.
        for bad in [
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#,
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,40]}}"#,
            r#"{"a":{"dtype":"","shape":[],"data_offsets":[0,0]}}"#,
            r#"{"a":{"dtype":"X","shape":[-1],"data_offsets":[0,0]}}"#,
            r#"{"a":{"dtype":"X","shape":[1.0],"data_offsets":[0,0]}}"#,
            r#"{"a":{"dtype":"X","shape":[],"data_offsets":[0,0,0]}}"#,
            r#"{"a":{"dtype":"X","shape":[],"data_offsets":[2,1]}}"#,
            r#"{"a":[]}"#,
            r#"{"__metadata__":[]}"#,
        ] {
            let f = file(bad, 8);
            let h = Header::parse(&f, f.len() as u64).unwrap();
            let m = h.members().next().unwrap();
            assert_eq!(h.tensor(&m).err(), Some(NotSafetensors), "{bad}");
        }
        // The last of two equal fields wins; unknown dtypes are not size-checked.
        let f = file(
            r#"{"a":{"dtype":"F32","dtype":"Q","shape":[5],"data_offsets":[0,3]}}"#,
            3,
        );
        let h = Header::parse(&f, f.len() as u64).unwrap();
        let t = h.tensor(&h.members().next().unwrap()).unwrap().unwrap();
        assert_eq!(t.dtype.plain(), Some("Q"));
        // Lengths: announced beyond the prefix, the file, or the limit.
        let f = file("{}", 0);
        assert!(Header::parse(&f[..9], 100).is_err());
        assert!(Header::parse(&f, 9).is_err());
        assert!(Header::parse(&f[..7], 100).is_err());
        assert!(Header::parse(&file("[]", 0), 10).is_err());
    }

    #[test]
    fn escaped_names_compare_as_text() {
        let f = file(r#"{"\u0062":1,"a\/":2,"\ud83d\ude00":3}"#, 0);
        let h = Header::parse(&f, f.len() as u64).unwrap();
        let keys: std::vec::Vec<_> = h.members().map(|m| m.key).collect();
        assert!(keys[0].is(b"b") && keys[0].plain().is_none());
        assert!(keys[1].is(b"a/"));
        assert_eq!(
            keys[2].bytes().collect::<std::vec::Vec<_>>(),
            "😀".as_bytes()
        );
        assert_eq!(keys[0].cmp_text(&keys[1]), Ordering::Greater);
        assert_eq!(keys[2].len(), 4);
    }
}
