// Shows that every rule of the strict CPU model (sim_engine.h, R1-R7, and SEM: documented
// semantics a kernel could get wrong) can fail: for each rule a
// small kernel that breaks it and must be rejected, and beside it the same kernel written
// correctly, which must be accepted (so a rule that rejects everything does not pass either).
// Each case runs in a child process with hazards fatal (ENEC_SIM_HAZARDS=abort semantics); the
// parent checks the outcome and that the message names the rule.
//
//   c++ -std=c++17 -O2 -I ffi/ascendc/sim ffi/ascendc/sim/sim_rules.cpp -o sim_rules && ./sim_rules
//
// Exit status 0 when every case behaves; 1 otherwise.
#include "kernel_operator.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string>

using namespace AscendC;

namespace {

alignas(64) uint8_t gm_a[64 * 1024];
alignas(64) uint8_t gm_b[64 * 1024];

GlobalTensor<uint16_t> gm16(uint8_t* p) {
    GlobalTensor<uint16_t> g;
    g.SetGlobalBuffer(reinterpret_cast<uint16_t*>(p), 32 * 1024);
    return g;
}

// ---- R1: pipe ordering -----------------------------------------------------------------------

// MTE2 fills a TBuf, V reads it: TBuf memory gets no queue events.
void r1_mte2_v(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECIN> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<int16_t> t = buf.Get<int16_t>();
    DataCopy(t.ReinterpretCast<uint16_t>(), gm16(gm_a), 512);
    if (sync) {
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
    }
    Adds(t, t, int16_t(1), 512);
}

// V reads a TBuf, then MTE2 overwrites it (write-after-read).
void r1_v_then_mte2(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECIN> a, b;
    pipe.InitBuffer(a, 1024);
    pipe.InitBuffer(b, 1024);
    LocalTensor<int16_t> x = a.Get<int16_t>(), y = b.Get<int16_t>();
    DataCopy(x.ReinterpretCast<uint16_t>(), gm16(gm_a), 512);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Adds(y, x, int16_t(1), 512);
    if (sync) {
        SetFlag<HardEvent::V_MTE2>(0);
        WaitFlag<HardEvent::V_MTE2>(0);
    }
    DataCopy(x.ReinterpretCast<uint16_t>(), gm16(gm_a), 512);
}

// V writes a TBuf, MTE3 copies it out: the encoder's staging pattern.
void r1_v_mte3(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECOUT> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<uint16_t> t = buf.Get<uint16_t>();
    Duplicate(t, uint16_t(7), 512);
    if (sync) PipeBarrier<PIPE_ALL>();
    DataCopy(gm16(gm_b), t, 512);
}

// MTE3 writes GM, MTE2 reads the same GM bytes back on the same core.
void r1_gm_mte3_mte2(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECOUT> a;
    TBuf<TPosition::VECIN> b;
    pipe.InitBuffer(a, 1024);
    pipe.InitBuffer(b, 1024);
    LocalTensor<uint16_t> x = a.Get<uint16_t>(), y = b.Get<uint16_t>();
    Duplicate(x, uint16_t(7), 512);
    PipeBarrier<PIPE_ALL>();
    DataCopy(gm16(gm_b), x, 512);
    if (sync) {
        SetFlag<HardEvent::MTE3_MTE2>(0);
        WaitFlag<HardEvent::MTE3_MTE2>(0);
    }
    DataCopy(y, gm16(gm_b), 512);
}

// A VECIN queue buffer read by V without EnQue/DeQue.
void r1_queue_skipped(bool sync) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> o;
    pipe.InitBuffer(q, 1, 1024);
    pipe.InitBuffer(o, 1024);
    LocalTensor<int16_t> t = q.AllocTensor<int16_t>();
    DataCopy(t.ReinterpretCast<uint16_t>(), gm16(gm_a), 512);
    if (sync) {
        q.EnQue(t);
        t = q.DeQue<int16_t>();
    }
    Adds(o.Get<int16_t>(), t, int16_t(1), 512);
    q.FreeTensor(t);
}

// The second fill of a one-buffer VECIN queue must wait for V's use of the first: FreeTensor ->
// AllocTensor orders it. Writing through a stale tensor handle skips that event.
void r1_stale_handle(bool sync) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> o;
    pipe.InitBuffer(q, 1, 1024);
    pipe.InitBuffer(o, 1024);
    LocalTensor<int16_t> t = q.AllocTensor<int16_t>();
    DataCopy(t.ReinterpretCast<uint16_t>(), gm16(gm_a), 512);
    q.EnQue(t);
    t = q.DeQue<int16_t>();
    Adds(o.Get<int16_t>(), t, int16_t(1), 512);
    if (sync) {
        q.FreeTensor(t);
        t = q.AllocTensor<int16_t>();
    }
    DataCopy(t.ReinterpretCast<uint16_t>(), gm16(gm_a), 512);
    q.FreeTensor(t);
}

// Two overlapping copy-outs on MTE3 (a header, then a word inside it): the second must wait for
// the first, or the first may land last.
void r1_mte3_mte3(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECOUT> a, b;
    pipe.InitBuffer(a, 1024);
    pipe.InitBuffer(b, 32);
    Duplicate(a.Get<uint16_t>(), uint16_t(7), 512);
    Duplicate(b.Get<uint16_t>(), uint16_t(9), 16);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gm16(gm_b), a.Get<uint16_t>(), 512);
    if (sync) PipeBarrier<PIPE_MTE3>();
    DataCopy(gm16(gm_b)[32], b.Get<uint16_t>(), 16);
}

// Two overlapping copy-ins on MTE2 into one buffer (the asc-devkit PipeBarrier sample).
void r1_mte2_mte2(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECIN> a;
    pipe.InitBuffer(a, 1024);
    DataCopy(a.Get<uint16_t>(), gm16(gm_a), 512);
    if (sync) PipeBarrier<PIPE_MTE2>();
    DataCopy(a.Get<uint16_t>()[256], gm16(gm_a)[2048], 256);
}

// A TBuf that V reads in tile i and MTE2 refills for tile i + 1: the refill must wait for the
// read (a two-buffer VECIN queue in ring order gives no such wait for the TBuf).
void r1_tbuf_across_tiles(bool sync) {
    TPipe pipe;
    TQue<TPosition::VECIN, 2> q;
    TBuf<TPosition::VECIN> t;
    TBuf<TPosition::VECCALC> o;
    pipe.InitBuffer(q, 2, 1024);
    pipe.InitBuffer(t, 1024);
    pipe.InitBuffer(o, 1024);
    for (int tile = 0; tile < 3; tile++) {
        LocalTensor<int16_t> x = q.AllocTensor<int16_t>();
        DataCopy(x.ReinterpretCast<uint16_t>(), gm16(gm_a)[512 * tile], 512);
        if (sync && tile > 0) {
            SetFlag<HardEvent::V_MTE2>(0);
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        DataCopy(t.Get<uint16_t>(), gm16(gm_a)[4096 + 512 * tile], 512);
        q.EnQue(x);
        x = q.DeQue<int16_t>();
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
        Add(o.Get<int16_t>(), x, t.Get<int16_t>(), 512);
        q.FreeTensor(x);
    }
}

// ---- R2: positions ---------------------------------------------------------------------------

// GM -> UB -> GM through a VECIN queue: MTE3 reads a VECIN buffer. TQueBind<VECIN, VECOUT> is
// the documented way.
template <class Q>
void gm_to_gm(Q& q, TPipe& pipe) {
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<uint16_t> t = q.template AllocTensor<uint16_t>();
    DataCopy(t, gm16(gm_a), 512);
    q.EnQue(t);
    t = q.template DeQue<uint16_t>();
    DataCopy(gm16(gm_b), t, 512);
    q.FreeTensor(t);
}
void r2_vecin_copied_out(bool sync) {
    TPipe pipe;
    if (sync) {
        TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
        gm_to_gm(q, pipe);
    } else {
        TQue<TPosition::VECIN, 1> q;
        gm_to_gm(q, pipe);
    }
}

// DataCopy GM->UB into a VECCALC TBuf: the documented path is GM -> VECIN.
void r2_copy_in_veccalc(bool sync) {
    TPipe pipe;
    if (sync) {
        TBuf<TPosition::VECIN> b;
        pipe.InitBuffer(b, 1024);
        DataCopy(b.Get<uint16_t>(), gm16(gm_a), 512);
    } else {
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 1024);
        DataCopy(b.Get<uint16_t>(), gm16(gm_a), 512);
    }
}

// DataCopy UB->GM from a VECCALC TBuf: the documented path is VECOUT -> GM.
void r2_copy_out_veccalc(bool sync) {
    TPipe pipe;
    if (sync) {
        TBuf<TPosition::VECOUT> b;
        pipe.InitBuffer(b, 1024);
        Duplicate(b.Get<uint16_t>(), uint16_t(1), 512);
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(gm16(gm_b), b.Get<uint16_t>(), 512);
    } else {
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 1024);
        Duplicate(b.Get<uint16_t>(), uint16_t(1), 512);
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(gm16(gm_b), b.Get<uint16_t>(), 512);
    }
}

// ---- R3: data cache --------------------------------------------------------------------------

// Every block writes its status word with a scalar SetValue: adjacent words share a line.
void r3_status(bool sync) {
    GlobalTensor<uint32_t> st;
    st.SetGlobalBuffer(reinterpret_cast<uint32_t*>(gm_b), 1024);
    uint32_t stride = sync ? 16 : 1;  // 16 words = one 64-byte line per block
    auto kernel = [&] {
        TPipe pipe;
        st.SetValue(uint32_t(GetBlockIdx()) * stride, 1);
    };
    ascendc_sim::launch(4, kernel);
}

// Every block writes its 4-byte status word with a 32-byte copy, which also covers the 7 words
// after it, other blocks' words. A copy of exactly 4 bytes is the fix.
void r3_status_dma(bool sync) {
    GlobalTensor<uint32_t> st;
    st.SetGlobalBuffer(reinterpret_cast<uint32_t*>(gm_b), 1024);
    auto kernel = [&] {
        TPipe pipe;
        TBuf<TPosition::VECOUT> b;
        pipe.InitBuffer(b, 32);
        LocalTensor<uint32_t> w = b.Get<uint32_t>();
        Duplicate(w, uint32_t(GetBlockIdx()), 8);
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        // Block b's word is word b; a 32-byte copy from it also covers words b + 1 .. b + 7.
        DataCopyExtParams copy(1, sync ? 4 : 32, 0, 0, 0);
        DataCopyPad(st[uint64_t(GetBlockIdx())], w, copy);
    };
    ascendc_sim::launch(8, kernel);
}

// Block 1 reads GM that block 0 writes in the same launch (no ordering between cores).
void r3_read_other_core(bool sync) {
    auto kernel = [&] {
        TPipe pipe;
        TBuf<TPosition::VECOUT> o;
        TBuf<TPosition::VECIN> i;
        pipe.InitBuffer(o, 1024);
        pipe.InitBuffer(i, 1024);
        if (GetBlockIdx() == 0) {
            Duplicate(o.Get<uint16_t>(), uint16_t(5), 512);
            SetFlag<HardEvent::V_MTE3>(0);
            WaitFlag<HardEvent::V_MTE3>(0);
            DataCopy(gm16(gm_b), o.Get<uint16_t>(), 512);
        } else {
            DataCopy(i.Get<uint16_t>(), gm16(sync ? gm_a : gm_b), 512);
        }
    };
    ascendc_sim::launch(2, kernel);
}

// ---- R4: interleaved blocks ------------------------------------------------------------------

// A kernel that relies on block b - 1 having finished when block b starts (sequential blocks).
void r4_block_order(bool sync) {
    int finished = 0;
    auto kernel = [&] {
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 1024);
        if (finished != GetBlockIdx())
            ascendc_sim::fail("R4: block %lld started before block %d finished", (long long)GetBlockIdx(), finished);
        for (int i = 0; i < 16; i++) Duplicate(buf.Get<uint16_t>(), uint16_t(i), 512);
        finished++;
    };
    ascendc_sim::launch(sync ? 1 : 8, kernel);
}

// ---- R5: queue depth -------------------------------------------------------------------------

// Depth 1 with two buffers (allowed: the count is independent of the depth), but two EnQue in a row.
void r5_depth(bool sync) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<uint16_t> a = q.AllocTensor<uint16_t>(), b = q.AllocTensor<uint16_t>();
    DataCopy(a, gm16(gm_a), 512);
    DataCopy(b, gm16(gm_a), 512);
    q.EnQue(a);
    if (sync) q.FreeTensor(q.DeQue<uint16_t>());
    q.EnQue(b);
    q.FreeTensor(q.DeQue<uint16_t>());
    if (!sync) q.FreeTensor(q.DeQue<uint16_t>());
}

// AllocTensor in ring order: with two buffers, the fill after a FreeTensor lands in the other
// buffer, which a TBuf-style reuse of "the buffer just freed" does not see. The broken kernel
// keeps the first handle and expects the second AllocTensor to hand it back.
void r5_ring_order(bool sync) {
    TPipe pipe;
    TQue<TPosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<uint16_t> a = q.AllocTensor<uint16_t>();
    uint32_t first = a.ub_offset();
    q.FreeTensor(a);
    LocalTensor<uint16_t> b = q.AllocTensor<uint16_t>();
    bool same = b.ub_offset() == first;
    q.FreeTensor(b);
    if (sync ? same : !same) ascendc_sim::fail("R5: AllocTensor did not hand the buffers out in ring order");
}

// ---- R6: limits ------------------------------------------------------------------------------

// 184 KB of buffers: the 8 KB of the 192 KB UB that scratch-space APIs take stay free.
void r6_ub(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 128 * 1024);
    pipe.InitBuffer(b, sync ? 56 * 1024 : 56 * 1024 + 32);
}

// ---- semantics --------------------------------------------------------------------------------

// Signed ShiftLeft is arithmetic: the sign bit stays. A kernel that expects the logical result
// (0x4001 << 1 = 0x8002 as int16) gets 0x0002.
void sem_signed_shift(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 512);
    LocalTensor<int16_t> t = b.Get<int16_t>();
    Duplicate(t, int16_t(0x4001), 256);
    ShiftLeft(t, t, int16_t(1), 256);
    int16_t want = sync ? int16_t(0x0002) : int16_t(0x8002u - 0x10000);
    if (t.GetValue(0) != want) ascendc_sim::fail("SEM: ShiftLeft int16 0x4001 << 1 gave %#x", t.GetValue(0) & 0xFFFF);
}

void r6_buffers(bool sync) {
    TPipe pipe;
    static TBuf<TPosition::VECCALC> bufs[65];
    for (int i = 0; i < (sync ? 64 : 65); i++) {
        bufs[i] = TBuf<TPosition::VECCALC>();
        pipe.InitBuffer(bufs[i], 32);
    }
}

void r6_gather(bool sync) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> src, off, dst;
    uint32_t n = sync ? 255 * 64 : 256 * 64;  // u32 elements: 64 per 256-byte repeat
    pipe.InitBuffer(src, 1024);
    pipe.InitBuffer(off, n * 4);
    pipe.InitBuffer(dst, n * 4);
    LocalTensor<uint32_t> o = off.Get<uint32_t>();
    Duplicate(o, uint32_t(0), int32_t(n));
    Duplicate(src.Get<uint32_t>(), uint32_t(0), 256);
    Gather(dst.Get<uint32_t>(), src.Get<uint32_t>(), o, uint32_t(0), n);
}

void r6_event_id(bool sync) {
    TPipe pipe;
    int32_t id = sync ? 7 : 8;
    SetFlag<HardEvent::V_MTE3>(id);
    WaitFlag<HardEvent::V_MTE3>(id);
}

// ---- R7: counters ----------------------------------------------------------------------------

// Exact counts for a known kernel; the broken variant does one scalar access more than claimed.
void r7_counters(bool sync) {
    {
        TPipe pipe;
        TBuf<TPosition::VECIN> buf;
        pipe.InitBuffer(buf, 1024);
        LocalTensor<uint16_t> t = buf.Get<uint16_t>();
        DataCopy(t, gm16(gm_a), 512);    // 1 DMA, 1024 bytes
        PipeBarrier<PIPE_ALL>();         // 1 barrier
        Duplicate(t, uint16_t(1), 512);  // 1 vector instruction, 4 repeats
        SetFlag<HardEvent::V_S>(0);
        WaitFlag<HardEvent::V_S>(0);     // 1 flag pair
        t.SetValue(0, t.GetValue(1));    // 2 scalar UB accesses
        if (!sync) t.GetValue(2);
        gm16(gm_b).SetValue(0, 1);       // 1 scalar GM access
    }
    const ascendc_sim::Stats& s = ascendc_sim::stats();
    if (s.dma_ops != 1 || s.dma_bytes != 1024 || s.pipe_all != 1 || s.vector_instr != 1 || s.vector_repeats != 4 ||
        s.flag_pairs != 1 || s.scalar_ub != 2 || s.scalar_gm != 1)
        ascendc_sim::fail("R7: counters dma %llu/%llu barrier %llu vector %llu/%llu flags %llu scalar ub %llu gm %llu",
                          (unsigned long long)s.dma_ops, (unsigned long long)s.dma_bytes,
                          (unsigned long long)s.pipe_all, (unsigned long long)s.vector_instr,
                          (unsigned long long)s.vector_repeats, (unsigned long long)s.flag_pairs,
                          (unsigned long long)s.scalar_ub, (unsigned long long)s.scalar_gm);
}

struct Case {
    const char* name;
    const char* rule;  // the message of the rejection names it
    void (*run)(bool sync);
    bool own_launch;   // the case launches its own blocks
};

const Case cases[] = {
    {"MTE2 -> V through a TBuf", "R1", r1_mte2_v, false},
    {"V read, then MTE2 overwrite", "R1", r1_v_then_mte2, false},
    {"V -> MTE3 through a TBuf", "R1", r1_v_mte3, false},
    {"MTE3 -> MTE2 on GM", "R1", r1_gm_mte3_mte2, false},
    {"overlapping MTE3 copy-outs", "R1", r1_mte3_mte3, false},
    {"overlapping MTE2 copy-ins", "R1", r1_mte2_mte2, false},
    {"TBuf refilled across tiles", "R1", r1_tbuf_across_tiles, false},
    {"VECIN read without EnQue/DeQue", "R1", r1_queue_skipped, false},
    {"VECIN refilled through a stale handle", "R1", r1_stale_handle, false},
    {"GM -> UB -> GM through VECIN", "R2", r2_vecin_copied_out, false},
    {"DataCopy GM->UB into VECCALC", "R2", r2_copy_in_veccalc, false},
    {"DataCopy UB->GM from VECCALC", "R2", r2_copy_out_veccalc, false},
    {"per-block status by scalar SetValue", "R3", r3_status, true},
    {"per-block status by a 32-byte DataCopyPad", "R3", r3_status_dma, true},
    {"GM read of another core's write", "R3", r3_read_other_core, true},
    {"kernel relying on block order", "R4", r4_block_order, true},
    {"two EnQue on a depth-1 queue", "R5", r5_depth, false},
    {"AllocTensor in ring order", "R5", r5_ring_order, false},
    {"UB over 184 KB", "R6", r6_ub, false},
    {"65 buffers in one TPipe", "R6", r6_buffers, false},
    {"Gather of 256 repeats", "R6", r6_gather, false},
    {"event id 8", "R6", r6_event_id, false},
    {"counters", "R7", r7_counters, false},
    {"signed ShiftLeft keeps the sign", "SEM", sem_signed_shift, false},
};

// Runs one case in a child; returns whether it was rejected, and its stderr in `log`.
bool rejected(const Case& c, bool sync, std::string& log) {
    int fds[2];
    if (pipe(fds) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        ascendc_sim::hazard_abort() = true;
        ascendc_sim::gm_register(gm_a, sizeof gm_a);
        ascendc_sim::gm_register(gm_b, sizeof gm_b);
        if (c.own_launch) c.run(sync);
        else ascendc_sim::launch(1, [&] { c.run(sync); });
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t n;
    log.clear();
    while ((n = read(fds[0], buf, sizeof buf)) > 0) log.append(buf, size_t(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace

int main() {
    int bad = 0;
    for (const Case& c : cases) {
        std::string log;
        bool broken_rejected = rejected(c, false, log);
        bool named = log.find(c.rule) != std::string::npos;
        std::string first = log.substr(0, log.find('\n'));
        std::string control;
        bool fixed_rejected = rejected(c, true, control);
        bool ok = broken_rejected && named && !fixed_rejected;
        std::printf("%s %s: %-40s broken: %s; fixed: %s\n", ok ? "ok  " : "FAIL", c.rule, c.name,
                    broken_rejected ? first.c_str() : "ACCEPTED", fixed_rejected ? control.c_str() : "accepted");
        bad += !ok;
    }
    std::printf("%s: %d of %zu rule cases behave\n", bad ? "FAIL" : "ok", int(sizeof cases / sizeof cases[0]) - bad,
                sizeof cases / sizeof cases[0]);
    return bad ? 1 : 0;
}
