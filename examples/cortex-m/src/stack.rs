//! Peak stack, measured: the free stack is painted with a known word, the code runs, and the
//! lowest word no longer painted marks how deep the stack went.

use core::ptr::{addr_of, read_volatile, write_volatile};

use cortex_m_rt::STACK_PAINT_VALUE;

extern "C" {
    // Set by cortex-m-rt's link.x: the stack runs from `_stack_start` (its top) down to
    // `_stack_end` (the end of the statics).
    static _stack_start: u32;
    static _stack_end: u32;
}

fn top() -> usize {
    addr_of!(_stack_start) as usize
}

fn bottom() -> usize {
    addr_of!(_stack_end) as usize
}

/// Paints the free stack, from its bottom up to just below the caller's frame. The reset handler
/// (cortex-m-rt's `paint-stack`) paints it once before `main`; this repaints it between
/// measurements.
#[inline(never)]
pub fn paint() {
    // Everything below the stack pointer is free (no interrupt is enabled), but for the few
    // words this function may push after reading it.
    let free_end = (cortex_m::register::msp::read() as usize & !3) - 64;
    let mut word = bottom();
    while word < free_end {
        // SAFETY: `word` is 4-aligned and lies between the end of the statics and the stack
        // pointer, memory that belongs to no live object.
        unsafe { write_volatile(word as *mut u32, STACK_PAINT_VALUE) };
        word += 4;
    }
}

/// Bytes of stack used since the last [`paint`] (or since reset): from the top of the stack down
/// to the lowest word that is no longer painted. `None` when the stack reached its bottom, where
/// the measurement would no longer be an upper bound.
#[inline(never)]
pub fn peak() -> Option<usize> {
    let mut word = bottom();
    // SAFETY: reads 4-aligned words of the stack region, all of it initialised memory (painted
    // or written by the program).
    while word < top() && unsafe { read_volatile(word as *const u32) } == STACK_PAINT_VALUE {
        word += 4;
    }
    (word > bottom()).then(|| top() - word)
}
