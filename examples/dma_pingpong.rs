//! DMA double buffering with the streaming decoder, simulated on the host.
//!
//! A stream of real bf16 weights (the MiniLM slice bundled in the repository, converted from
//! fp32) sits in "flash". An input DMA engine copies it in fixed transfers into two input buffers,
//! alternately; the decoder reads one while the engine refills the other. The decoder writes into
//! two output buffers, alternately; an output DMA engine drains the full one while the decoder
//! fills the other. Between calls the decoder holds no reference to any of the four buffers, which
//! is what lets real DMA hardware own them in the meantime.
//!
//! cargo run --release --example dma_pingpong

use enec::streaming::capacity_for;
use enec::{decode, encode, max_encoded_size, Decoder, Dtype, EncodeOptions, Status};
use half::bf16;

/// 934,656 fp32 weights of all-MiniLM-L6-v2 (Apache-2.0); see tests/data/README.md.
const SLICE: &[u8] = include_bytes!("../tests/data/minilm-slice.f32.bin");

/// Elements per frame: 4,096 bf16 = 8 KiB decoded.
const FRAME_LEN: usize = 4096;
/// The decoder's buffer: one compressed and one decoded frame, 16,416 bytes.
const CAP: usize = capacity_for(Dtype::Bf16, FRAME_LEN);
/// One input DMA transfer (flash to RAM).
const IN_BUF: usize = 4096;
/// One output DMA transfer (RAM to the consumer).
const OUT_BUF: usize = 8192;

/// Copies the stream from "flash" in transfers of at most `IN_BUF` bytes.
struct DmaIn<'a> {
    flash: &'a [u8],
    transfers: usize,
}

impl DmaIn<'_> {
    /// Fills `buf` with the next transfer; returns its length (0 at the end of flash).
    fn fill(&mut self, buf: &mut [u8; IN_BUF]) -> usize {
        let n = self.flash.len().min(IN_BUF);
        buf[..n].copy_from_slice(&self.flash[..n]);
        self.flash = &self.flash[n..];
        self.transfers += usize::from(n > 0);
        n
    }
}

/// Takes full output buffers away (here: appends them to the restored tensor).
struct DmaOut {
    restored: Vec<u8>,
    transfers: usize,
}

impl DmaOut {
    fn drain(&mut self, buf: &[u8]) {
        self.restored.extend_from_slice(buf);
        self.transfers += 1;
    }
}

fn main() -> Result<(), enec::Error> {
    // The stream in flash: MiniLM weights as bf16, 4,096-element frames.
    let weights: Vec<bf16> = SLICE
        .chunks_exact(4)
        .map(|b| bf16::from_f32(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect();
    let original: &[u8] = bytemuck::cast_slice(&weights);
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(FRAME_LEN as u32)?;
    let mut flash = vec![0u8; max_encoded_size(&options, original.len())?];
    let len = encode(&options, original, &mut flash)?;
    flash.truncate(len);

    // The codec and the four ping-pong buffers: all fixed size, nothing allocated below.
    let mut decoder = Box::new(Decoder::<CAP>::new());
    let mut input = [[0u8; IN_BUF]; 2];
    let mut output = [[0u8; OUT_BUF]; 2];

    let mut dma_in = DmaIn {
        flash: &flash,
        transfers: 0,
    };
    let mut dma_out = DmaOut {
        restored: Vec::with_capacity(original.len()),
        transfers: 0,
    };

    // Prime both input buffers.
    let mut in_len = [0usize; 2];
    in_len[0] = dma_in.fill(&mut input[0]);
    in_len[1] = dma_in.fill(&mut input[1]);
    let (mut cur_in, mut in_pos) = (0, 0);
    let (mut cur_out, mut out_fill) = (0, 0);
    let mut calls = 0;

    loop {
        let progress = decoder.decode(
            &input[cur_in][in_pos..in_len[cur_in]],
            &mut output[cur_out][out_fill..],
        )?;
        calls += 1;
        in_pos += progress.consumed;
        out_fill += progress.written;

        // Input buffer spent: give it back to the DMA engine, which refills it while the decoder
        // reads the other one.
        if in_pos == in_len[cur_in] && in_len[cur_in] > 0 {
            in_len[cur_in] = dma_in.fill(&mut input[cur_in]);
            cur_in ^= 1;
            in_pos = 0;
        }
        // Output buffer full (or the stream done): the DMA engine drains it while the decoder
        // fills the other one.
        let done = progress.status == Status::Done;
        if out_fill == OUT_BUF || (done && out_fill > 0) {
            dma_out.drain(&output[cur_out][..out_fill]);
            cur_out ^= 1;
            out_fill = 0;
        }
        if done {
            break;
        }
        if progress.status == Status::NeedsInput && in_len[cur_in] == 0 {
            break; // flash exhausted before the stream ended: finish() says so
        }
    }
    decoder.finish()?;

    let mut one_shot = vec![0u8; original.len()];
    decode(&flash, &mut one_shot)?;
    let ok = dma_out.restored == original && one_shot == original;

    println!(
        "enec DMA ping-pong: {} MiniLM weights as bf16",
        weights.len()
    );
    println!(
        "  stream in flash:      {} bytes from {} (ratio {:.4}), {} frames of {} elements",
        flash.len(),
        original.len(),
        original.len() as f64 / flash.len() as f64,
        decoder.frames_decoded(),
        FRAME_LEN
    );
    println!(
        "  decoder fixed memory: {} bytes (size_of::<Decoder<{CAP}>>; buffer {CAP} bytes = capacity_for(Bf16, {FRAME_LEN}))",
        core::mem::size_of::<Decoder<CAP>>()
    );
    println!(
        "  ping-pong buffers:    2 x {IN_BUF} bytes in, 2 x {OUT_BUF} bytes out ({} bytes)",
        core::mem::size_of_val(&input) + core::mem::size_of_val(&output)
    );
    println!(
        "  transfers:            {} in, {} out; {} decoder calls",
        dma_in.transfers, dma_out.transfers, calls
    );
    println!(
        "  for the default 16,384-element frames: bf16/fp16 {} bytes, fp32 {} bytes",
        enec::streaming::DEFAULT_CAPACITY_BF16,
        enec::streaming::DEFAULT_CAPACITY_FP32
    );
    println!(
        "  verified:             {}",
        if ok {
            "byte-identical to the original and to the one-shot decode"
        } else {
            "MISMATCH"
        }
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
