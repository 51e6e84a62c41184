//! I/O adapters over the streaming core: `embedded-io` `Read`/`BufRead`/`Write`, and (feature
//! `std`) `std::io::Read`/`BufRead`/`Write`.
//!
//! Two types cover both directions and both trait families:
//!
//! - [`Reader`]`<C, R>` pulls bytes from an inner reader `R` through a codec `C`: with a
//!   [`Decoder`] it reads a stream and yields the decoded bytes ([`DecodeReader`]); with an
//!   [`Encoder`] it reads raw elements and yields the stream ([`EncodeReader`]). It implements
//!   `Read` and `BufRead` (whose buffer is the codec's own: no extra copy).
//! - [`Writer`]`<C, W>` pushes bytes written to it through a codec into an inner writer `W`:
//!   [`EncodeWriter`] and [`DecodeWriter`]. It implements `Write`.
//!
//! They implement the `embedded-io` traits when the inner type does, and the `std::io` ones when
//! the inner type does (feature `std`). Neither allocates nor adds a buffer: input is read
//! straight into the codec's buffer (never more than the stream holds, so whatever follows the
//! stream stays in the inner reader) and output is written from it, or straight into the
//! caller's slice when a whole frame fits. The codec may be owned or borrowed (`&mut Decoder<N>`
//! also implements [`Codec`]), so it can live in a `static`.
//!
//! Errors: the `embedded-io` impls return [`IoError`], whose `Display` is the
//! [`crate::Error`] text; the `std` impls return `std::io::Error`s that wrap the
//! [`crate::Error`] (`get_ref()` and `downcast` give it back, `to_string()` gives its text).
//!
//! ```
//! use embedded_io::{Read, Write};
//! use enec::io::{DecodeReader, EncodeWriter};
//! use enec::streaming::capacity_for;
//! use enec::{Decoder, Dtype, EncodeOptions, Encoder};
//!
//! const CAP: usize = capacity_for(Dtype::Bf16, 1024);
//! let raw: Vec<u8> = (0..3000u32).flat_map(|i| half::bf16::from_f32(i as f32 * 1e-3).to_le_bytes()).collect();
//!
//! let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024)?;
//! let mut stream = [0u8; 8192];
//! let mut sink: &mut [u8] = &mut stream;
//! let mut writer = EncodeWriter::<_, CAP>::new(Encoder::new(options, 3000)?, &mut sink);
//! writer.write_all(&raw).unwrap();
//! writer.flush().unwrap();
//! writer.finish()?;
//! let left = sink.len();
//! let len = stream.len() - left;
//!
//! let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), &stream[..len]);
//! let mut restored = [0u8; 6000];
//! reader.read_exact(&mut restored).unwrap();
//! assert_eq!(&restored[..], &raw[..]);
//! # Ok::<(), enec::Error>(())
//! ```

use core::fmt;

use crate::error::Error;
use crate::streaming::{Decoder, Encoder, Progress, Status};

mod private {
    pub trait Sealed {}
}

/// The push/pull interface the adapters drive: implemented by [`Encoder`] and [`Decoder`] (and
/// `&mut` references to them). Each method is the codec's inherent method of the same meaning.
pub trait Codec: private::Sealed {
    /// [`Encoder::encode`] or [`Decoder::decode`].
    fn process(&mut self, input: &[u8], output: &mut [u8]) -> crate::error::Result<Progress>;
    /// The internal buffer space for the next input bytes (`input_buffer`).
    fn input_buffer(&mut self) -> &mut [u8];
    /// Marks `n` bytes of [`Codec::input_buffer`] as filled (`commit_input`).
    fn commit_input(&mut self, n: usize);
    /// Output waiting in the internal buffer (`pending_output`).
    fn pending_output(&self) -> &[u8];
    /// Marks `n` bytes of [`Codec::pending_output`] as handed out (`consume_output`).
    fn consume_output(&mut self, n: usize);
    /// `Ok` when the stream is complete (`finish`).
    fn finish(&self) -> crate::error::Result<()>;
}

impl<const CAP: usize> private::Sealed for Decoder<CAP> {}
impl<const CAP: usize> private::Sealed for Encoder<CAP> {}
impl<T: Codec> private::Sealed for &mut T {}

impl<const CAP: usize> Codec for Decoder<CAP> {
    fn process(&mut self, input: &[u8], output: &mut [u8]) -> crate::error::Result<Progress> {
        self.decode(input, output)
    }
    fn input_buffer(&mut self) -> &mut [u8] {
        Decoder::input_buffer(self)
    }
    fn commit_input(&mut self, n: usize) {
        Decoder::commit_input(self, n)
    }
    fn pending_output(&self) -> &[u8] {
        Decoder::pending_output(self)
    }
    fn consume_output(&mut self, n: usize) {
        Decoder::consume_output(self, n)
    }
    fn finish(&self) -> crate::error::Result<()> {
        Decoder::finish(self)
    }
}

impl<const CAP: usize> Codec for Encoder<CAP> {
    fn process(&mut self, input: &[u8], output: &mut [u8]) -> crate::error::Result<Progress> {
        self.encode(input, output)
    }
    fn input_buffer(&mut self) -> &mut [u8] {
        Encoder::input_buffer(self)
    }
    fn commit_input(&mut self, n: usize) {
        Encoder::commit_input(self, n)
    }
    fn pending_output(&self) -> &[u8] {
        Encoder::pending_output(self)
    }
    fn consume_output(&mut self, n: usize) {
        Encoder::consume_output(self, n)
    }
    fn finish(&self) -> crate::error::Result<()> {
        Encoder::finish(self)
    }
}

impl<T: Codec> Codec for &mut T {
    fn process(&mut self, input: &[u8], output: &mut [u8]) -> crate::error::Result<Progress> {
        T::process(self, input, output)
    }
    fn input_buffer(&mut self) -> &mut [u8] {
        T::input_buffer(self)
    }
    fn commit_input(&mut self, n: usize) {
        T::commit_input(self, n)
    }
    fn pending_output(&self) -> &[u8] {
        T::pending_output(self)
    }
    fn consume_output(&mut self, n: usize) {
        T::consume_output(self, n)
    }
    fn finish(&self) -> crate::error::Result<()> {
        T::finish(self)
    }
}

/// Error of the `embedded-io` adapters: the codec's or the inner reader's/writer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IoError<E> {
    /// The stream is malformed, truncated, larger than the codec's capacity, ...
    Codec(Error),
    /// The inner reader or writer failed.
    Io(E),
    /// The inner writer accepted no bytes (`write` returned `Ok(0)`).
    WriteZero,
}

impl<E> From<Error> for IoError<E> {
    fn from(e: Error) -> Self {
        IoError::Codec(e)
    }
}

impl<E: fmt::Debug> fmt::Display for IoError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Codec(e) => fmt::Display::fmt(e, f),
            IoError::Io(e) => write!(f, "I/O error: {e:?}"),
            IoError::WriteZero => f.write_str("the inner writer accepted no bytes"),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for IoError<E> {}

impl<E: embedded_io::Error> embedded_io::Error for IoError<E> {
    fn kind(&self) -> embedded_io::ErrorKind {
        use embedded_io::ErrorKind as K;
        match self {
            IoError::Codec(e) => match e {
                Error::UnsupportedVersion { .. }
                | Error::UnsupportedDtype(_)
                | Error::UnsupportedFlags(_)
                | Error::UnsupportedCoding { .. } => K::Unsupported,
                Error::FrameTooLarge { .. } => K::OutOfMemory,
                Error::TrailingData { .. }
                | Error::PartialElement { .. }
                | Error::InvalidFrameLength(_)
                | Error::TooLarge
                | Error::DtypeMismatch { .. } => K::InvalidInput,
                _ => K::InvalidData,
            },
            IoError::Io(e) => e.kind(),
            IoError::WriteZero => K::WriteZero,
        }
    }
}

/// Reads through a codec: decoded bytes from a stream ([`DecodeReader`]) or a stream from raw
/// elements ([`EncodeReader`]). See the [module docs](self).
#[derive(Debug)]
pub struct Reader<C, R> {
    codec: C,
    inner: R,
}

/// Reads an enec stream from `R` and yields its decoded bytes.
pub type DecodeReader<R, const CAP: usize> = Reader<Decoder<CAP>, R>;
/// Reads raw elements from `R` and yields the enec stream.
pub type EncodeReader<R, const CAP: usize> = Reader<Encoder<CAP>, R>;

impl<C: Codec, R> Reader<C, R> {
    /// A reader of `inner` through `codec`.
    pub fn new(codec: C, inner: R) -> Self {
        Reader { codec, inner }
    }

    /// `Ok` once the whole stream has gone through and been read out (the codec's `finish`).
    pub fn finish(&self) -> crate::error::Result<()> {
        self.codec.finish()
    }

    /// The codec.
    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader, mutably (reading from it directly disturbs the stream).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The codec and the inner reader.
    pub fn into_parts(self) -> (C, R) {
        (self.codec, self.inner)
    }
}

/// Writes through a codec: a stream from raw elements written to it ([`EncodeWriter`]), or
/// decoded bytes from a stream written to it ([`DecodeWriter`]). See the [module docs](self).
///
/// Each `write` takes bytes into the codec and hands the output on; after the last one, `flush`
/// (which also flushes the inner writer) and [`finish`](Writer::finish) to check that the stream
/// is complete.
#[derive(Debug)]
pub struct Writer<C, W> {
    codec: C,
    inner: W,
}

/// Encodes the raw elements written to it into an enec stream written to `W`.
pub type EncodeWriter<W, const CAP: usize> = Writer<Encoder<CAP>, W>;
/// Decodes the enec stream written to it into `W`.
pub type DecodeWriter<W, const CAP: usize> = Writer<Decoder<CAP>, W>;

impl<C: Codec, W> Writer<C, W> {
    /// A writer into `inner` through `codec`.
    pub fn new(codec: C, inner: W) -> Self {
        Writer { codec, inner }
    }

    /// `Ok` once the whole stream has gone through and all output was handed to the inner
    /// writer (call `flush` first: a `write` whose hand-over failed after taking input leaves
    /// output waiting, and `flush` retries it). A stream that received fewer bytes than it
    /// should gives [`Error::Truncated`].
    pub fn finish(&self) -> crate::error::Result<()> {
        self.codec.finish()
    }

    /// The codec.
    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer, mutably (writing to it directly disturbs the output).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The codec and the inner writer.
    pub fn into_parts(self) -> (C, W) {
        (self.codec, self.inner)
    }
}

// ---------------------------------------------------------------------------------------------
// The driving loops, shared by both trait families (E: the inner reader's/writer's error).
// ---------------------------------------------------------------------------------------------

/// Reads into the codec's input buffer; end of input becomes the codec's `finish` error.
fn refill<C: Codec, E>(
    codec: &mut C,
    read: &mut impl FnMut(&mut [u8]) -> Result<usize, E>,
) -> Result<(), IoError<E>> {
    let n = read(codec.input_buffer()).map_err(IoError::Io)?;
    if n == 0 {
        // Not done (the codec asked for input), so `finish` fails and says why.
        return codec.finish().map_err(IoError::Codec);
    }
    codec.commit_input(n);
    Ok(())
}

fn read_through<C: Codec, E>(
    codec: &mut C,
    buf: &mut [u8],
    mut read: impl FnMut(&mut [u8]) -> Result<usize, E>,
) -> Result<usize, IoError<E>> {
    if buf.is_empty() {
        return Ok(0);
    }
    loop {
        let p = codec.process(&[], buf)?;
        if p.written > 0 {
            return Ok(p.written);
        }
        match p.status {
            Status::NeedsInput => refill(codec, &mut read)?,
            // Done; HasOutput cannot come with nothing written into a non-empty buffer.
            Status::Done | Status::HasOutput => return Ok(0),
        }
    }
}

/// Makes the codec hold output in its buffer, unless the stream is done.
fn fill_through<C: Codec, E>(
    codec: &mut C,
    mut read: impl FnMut(&mut [u8]) -> Result<usize, E>,
) -> Result<(), IoError<E>> {
    while codec.pending_output().is_empty() {
        let p = codec.process(&[], &mut [])?;
        match p.status {
            Status::NeedsInput => refill(codec, &mut read)?,
            Status::Done | Status::HasOutput => break,
        }
    }
    Ok(())
}

fn drain<C: Codec, E>(
    codec: &mut C,
    write: &mut impl FnMut(&[u8]) -> Result<usize, E>,
) -> Result<(), IoError<E>> {
    loop {
        let pending = codec.pending_output();
        if pending.is_empty() {
            return Ok(());
        }
        match write(pending).map_err(IoError::Io)? {
            0 => return Err(IoError::WriteZero),
            n => codec.consume_output(n),
        }
    }
}

fn write_through<C: Codec, E>(
    codec: &mut C,
    buf: &[u8],
    mut write: impl FnMut(&[u8]) -> Result<usize, E>,
) -> Result<usize, IoError<E>> {
    if buf.is_empty() {
        return Ok(0);
    }
    drain(codec, &mut write)?;
    let p = codec.process(buf, &mut [])?;
    if p.consumed == 0 {
        // Only a decoder past the end of its stream takes nothing.
        return Err(IoError::Codec(Error::TrailingData {
            extra: buf.len() as u64,
        }));
    }
    // The input is taken, so report it; if handing the output on fails, the output stays in the
    // codec and the next write or flush (which drain first) meets the error again.
    let _ = drain(codec, &mut write);
    Ok(p.consumed)
}

// ---------------------------------------------------------------------------------------------
// embedded-io
// ---------------------------------------------------------------------------------------------

impl<C, R: embedded_io::ErrorType> embedded_io::ErrorType for Reader<C, R> {
    type Error = IoError<R::Error>;
}

impl<C: Codec, R: embedded_io::Read> embedded_io::Read for Reader<C, R> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let inner = &mut self.inner;
        read_through(&mut self.codec, buf, |b| inner.read(b))
    }
}

impl<C: Codec, R: embedded_io::Read> embedded_io::BufRead for Reader<C, R> {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        let inner = &mut self.inner;
        fill_through(&mut self.codec, |b| inner.read(b))?;
        Ok(self.codec.pending_output())
    }

    fn consume(&mut self, amt: usize) {
        self.codec.consume_output(amt);
    }
}

impl<C, W: embedded_io::ErrorType> embedded_io::ErrorType for Writer<C, W> {
    type Error = IoError<W::Error>;
}

impl<C: Codec, W: embedded_io::Write> embedded_io::Write for Writer<C, W> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        let inner = &mut self.inner;
        write_through(&mut self.codec, buf, |b| inner.write(b))
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        let inner = &mut self.inner;
        drain(&mut self.codec, &mut |b| inner.write(b))?;
        self.inner.flush().map_err(IoError::Io)
    }
}

// ---------------------------------------------------------------------------------------------
// std::io
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "std")]
mod std_impls {
    use std::io;

    use super::{drain, fill_through, read_through, write_through, Codec, IoError, Reader, Writer};
    use crate::error::Error;

    fn kind(e: &Error) -> io::ErrorKind {
        match e {
            Error::Truncated { .. } => io::ErrorKind::UnexpectedEof,
            Error::UnsupportedVersion { .. }
            | Error::UnsupportedDtype(_)
            | Error::UnsupportedFlags(_)
            | Error::UnsupportedCoding { .. } => io::ErrorKind::Unsupported,
            Error::FrameTooLarge { .. } => io::ErrorKind::OutOfMemory,
            Error::TrailingData { .. }
            | Error::PartialElement { .. }
            | Error::InvalidFrameLength(_)
            | Error::TooLarge
            | Error::DtypeMismatch { .. } => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::InvalidData,
        }
    }

    impl From<Error> for io::Error {
        /// An `io::Error` of a fitting kind that wraps the enec error (its text, and
        /// `get_ref()`/`downcast` give it back).
        fn from(e: Error) -> io::Error {
            io::Error::new(kind(&e), e)
        }
    }

    fn to_std(e: IoError<io::Error>) -> io::Error {
        match e {
            IoError::Codec(e) => e.into(),
            IoError::Io(e) => e,
            IoError::WriteZero => io::Error::new(
                io::ErrorKind::WriteZero,
                "the inner writer accepted no bytes",
            ),
        }
    }

    /// `write`, retried while interrupted.
    fn write_retrying(w: &mut impl io::Write, b: &[u8]) -> io::Result<usize> {
        loop {
            match w.write(b) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    impl<C: Codec, R: io::Read> io::Read for Reader<C, R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let inner = &mut self.inner;
            read_through(&mut self.codec, buf, |b| inner.read(b)).map_err(to_std)
        }
    }

    impl<C: Codec, R: io::Read> io::BufRead for Reader<C, R> {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            let inner = &mut self.inner;
            fill_through(&mut self.codec, |b| inner.read(b)).map_err(to_std)?;
            Ok(self.codec.pending_output())
        }

        fn consume(&mut self, amt: usize) {
            self.codec.consume_output(amt);
        }
    }

    impl<C: Codec, W: io::Write> io::Write for Writer<C, W> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let inner = &mut self.inner;
            write_through(&mut self.codec, buf, |b| write_retrying(inner, b)).map_err(to_std)
        }

        fn flush(&mut self) -> io::Result<()> {
            let inner = &mut self.inner;
            drain(&mut self.codec, &mut |b| write_retrying(inner, b)).map_err(to_std)?;
            self.inner.flush()
        }
    }
}
