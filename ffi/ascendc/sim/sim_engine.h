// The engine of the strict CPU model of AscendC (see kernel_operator.h for the API surface):
// cores, pipes, the hazard detector, the block scheduler and the counters.
//
// Rules it enforces (the names are used in every message):
//   R1 pipes: every operation is tagged with its pipe (S scalar, V vector, MTE2 GM->UB, MTE3
//      UB->GM). A read-after-write, write-after-read or write-after-write between two different
//      pipes of V / MTE2 / MTE3 on the same UB bytes, or the same GM bytes of one core, is a hazard
//      unless an ordering separates them: PipeBarrier<PIPE_ALL>, SetFlag/WaitFlag of that pipe
//      pair, or a queue event (EnQue -> DeQue orders the queue's producer pipe before its
//      consumer pipe, FreeTensor -> AllocTensor the consumer before the producer). Ordering is
//      tracked with one vector clock per pipe, so it is transitive (V waits MTE2, MTE3 waits V:
//      MTE3 is after MTE2). Scalar accesses are synchronised by the compiler (--cce-auto-sync,
//      "Automatic Synchronization" in the BiSheng compiler guide: MTE2, MTE3 and V with the
//      scalar unit): a scalar access to bytes a pipe touched waits for that pipe, and since the
//      scalar unit issues every later instruction, all pipes are then ordered after it.
//      Within one DMA pipe, two copies whose destinations overlap (MTE2 on UB, MTE3 on GM) are a
//      write-after-write hazard unless PipeBarrier<PIPE_MTE2> / <PIPE_MTE3>, PIPE_ALL or a wait
//      that covers the earlier copy separates them: the PipeBarrier sample of asc-devkit
//      (examples/02_features/11_synchronous_control/pipe_barrier) says the developer inserts it.
//   R2 positions: a queue tensor is touched only by its queue's producer and consumer pipes (and
//      the scalar unit): VECIN by MTE2 and V, VECOUT by V and MTE3, TQueBind<VECIN, VECOUT> by
//      MTE2 and MTE3. DataCopy GM->UB writes a VECIN buffer and DataCopy UB->GM reads a VECOUT
//      one; DataCopyPad moves between GM and VECIN or VECOUT (the data paths the DataCopy and
//      DataCopyPad pages list for Atlas A2; a VECCALC TBuf is on neither path).
//   R3 across cores: a scalar GM write to a 64-byte line that another core also writes in the
//      same launch (scalar GM writes go through the core's data cache, which writes whole lines
//      back); and any GM bytes that one core writes and another core reads or writes in the same
//      launch (the cores of a launch are not ordered; a later launch sees all of an earlier one).
//   R4 blocks: the blocks of a launch run interleaved, each on its own stack, switched at every
//      pipe operation in an order drawn from a seeded generator (ENEC_SIM_SEED, default 1).
//   R5 queues: at most `depth` EnQue without a DeQue; the buffer count of InitBuffer is
//      independent of the depth; AllocTensor hands the buffers out in ring order (the next free
//      one after the last handed out), so a kernel cannot rely on getting back the buffer it
//      freed last.
//   R6 limits: the buffers of a TPipe fit 184 KB of the 192 KB Unified Buffer (the 8 KB an API
//      that needs scratch space takes stay free, so any such API may be added), at most 64
//      buffers per TPipe, Gather repeat count <= 255, SetFlag/WaitFlag event ids 0..7.
//   R7 counters: vector instructions and their 256-byte repeats, DMA operations and bytes (and the
//      bytes copied in), scalar UB and GM accesses, the register-level scalar work the kernels
//      count in their parameter searches and layouts (ENEC_SCALAR_OPS), PIPE_ALL barriers, SetFlag/WaitFlag pairs
//      (the kernel's and those the compiler inserts before a scalar access that must wait), and
//      the vector instructions issued while an earlier copy-in / copy-out may still run (stats()).
//
// R1-R3 violations are hazards: counted, the first few printed, and with ENEC_SIM_HAZARDS=abort
// (or hazard_abort = true) fatal at once. Everything else the documentation forbids aborts.
#pragma once

#include <ucontext.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ascendc_sim {

inline void say(const char* kind, const char* fmt, va_list ap) {
    std::fprintf(stderr, "ascendc-sim: %s: ", kind);
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
}

[[noreturn]] inline void fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    say("misuse", fmt, ap);
    va_end(ap);
    std::abort();
}

#define ENEC_SIM_CHECK(cond, ...)                      \
    do {                                               \
        if (!(cond)) ::ascendc_sim::fail(__VA_ARGS__); \
    } while (0)

constexpr uint32_t UB_BYTES = 192 * 1024;
constexpr uint32_t UB_BYTES_WITH_SCRATCH = 184 * 1024;
constexpr uint32_t ALIGN = 32;
constexpr uint32_t MAX_BUFFERS_PER_PIPE = 64;
constexpr uint32_t MAX_BLOCKS = 64;
constexpr uint32_t EVENT_IDS = 8;
constexpr uint32_t GRAIN = 2;  // hazard tracking granularity in bytes (every operand is >= 2-byte aligned)

// Pipes the model tracks. S issues everything; V, MTE2, MTE3 run asynchronously.
enum Unit : uint8_t { U_S = 0, U_V = 1, U_MTE2 = 2, U_MTE3 = 3, UNITS = 4, U_NONE = 0xFF };
inline const char* unit_name(int u) {
    static const char* names[] = {"S", "V", "MTE2", "MTE3"};
    return u < UNITS ? names[u] : "?";
}

// A vector clock: c[p] = the number of pipe-p instructions known to have completed.
struct Clock {
    uint32_t c[UNITS] = {0, 0, 0, 0};
    void join(const Clock& o) {
        for (int i = 0; i < UNITS; i++)
            if (o.c[i] > c[i]) c[i] = o.c[i];
    }
};

struct Stats {
    uint64_t vector_instr = 0, vector_repeats = 0;
    uint64_t dma_ops = 0, dma_bytes = 0, dma_in_bytes = 0;  // all DMA bytes; those copied GM -> UB
    uint64_t scalar_ub = 0, scalar_gm = 0;
    uint64_t scalar_ops = 0;  // register-level scalar work the kernels count (ENEC_SCALAR_OPS)
    uint64_t pipe_all = 0, flag_pairs = 0;
    // Vector instructions issued while a copy-in (MTE2) or copy-out (MTE3) issued earlier is not
    // yet ordered before them, i.e. free to run at the same time: what double buffering buys.
    uint64_t vector_with_copy_in = 0, vector_with_copy_out = 0;
    uint64_t hazards = 0;
    uint64_t by_rule[4] = {0, 0, 0, 0};  // hazards of R1, R2, R3 (index = rule number)
    // Vector instructions and repeats per instruction name (the cost breakdown; sim_driver
    // writes it to the file ENEC_SIM_BREAKDOWN names).
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_kind;
    std::string last_vector;
};
inline Stats& stats() {
    static Stats s;
    return s;
}

inline bool& hazard_abort() {
    static bool v = [] {
        const char* e = std::getenv("ENEC_SIM_HAZARDS");
        return e != nullptr && std::strcmp(e, "abort") == 0;
    }();
    return v;
}

// `fmt` starts with the rule's name ("R1 ...", "R2 ...", "R3 ...").
inline void hazard(const char* fmt, ...) {
    stats().hazards++;
    if (fmt[0] == 'R' && fmt[1] >= '1' && fmt[1] <= '3') stats().by_rule[fmt[1] - '0']++;
    static uint64_t printed = 0;
    if (printed >= 8 && !hazard_abort()) return;
    printed++;
    va_list ap;
    va_start(ap, fmt);
    say("hazard", fmt, ap);
    va_end(ap);
    if (hazard_abort()) std::abort();
}

enum PositionBits : uint8_t { POS_VECIN = 1, POS_VECOUT = 2, POS_VECCALC = 4 };

enum SlotState : int { SLOT_FREE = 0, SLOT_ALLOCATED, SLOT_ENQUEUED, SLOT_DEQUEUED, SLOT_TBUF };

// One buffer handed out by TPipe::InitBuffer.
struct Slot {
    uint32_t offset = 0;  // byte offset in UB
    uint32_t bytes = 0;
    int state = SLOT_FREE;
    uint8_t producer = U_NONE, consumer = U_NONE;  // queue buffers: the pipes of its position (R2)
    uint8_t positions = 0;  // POS_* bits: the TPositions of its queue or TBuf (R2)
    Clock enqueued;  // producer's clock at EnQue (consumer joins it at DeQue)
    Clock freed;     // consumer's clock at FreeTensor (producer joins it at AllocTensor)
};

// Per 2-byte grain of UB: last writer (stamp << 2 | unit, 0 = none), last V and MTE3 reads.
struct UbShadow {
    std::vector<uint32_t> w, rv, rm3;
    void reset() {
        w.assign(UB_BYTES / GRAIN, 0);
        rv.assign(UB_BYTES / GRAIN, 0);
        rm3.assign(UB_BYTES / GRAIN, 0);
    }
};

struct Core {
    alignas(64) uint8_t ub[UB_BYTES];
    uint32_t used = 0;  // bytes handed out by the live TPipe
    uint32_t buffers = 0;
    bool pipe_alive = false;
    void* tpipe = nullptr;  // the live AscendC::TPipe (GetTPipePtr)
    int64_t block_idx = 0;
    int64_t block_num = 1;
    Clock clk[UNITS];  // clk[p]: what pipe p is ordered after (clk[p].c[p]: p's own count)
    // done[p]: the last pipe-p instruction known complete before p's next one issues (a
    // PipeBarrier<p>, PIPE_ALL, or a wait whose clock covers it): same-pipe ordering of DMA copies.
    uint32_t done[UNITS] = {0, 0, 0, 0};
    Clock flag[UNITS][UNITS][EVENT_IDS];
    bool flag_set[UNITS][UNITS][EVENT_IDS] = {};
    UbShadow shadow;
    void reset(int64_t idx, int64_t num) {
        used = 0;
        buffers = 0;
        pipe_alive = false;
        block_idx = idx;
        block_num = num;
        for (auto& c : clk) c = Clock();
        std::memset(done, 0, sizeof done);
        std::memset(flag_set, 0, sizeof flag_set);
        shadow.reset();
    }
};

struct World {
    std::vector<std::unique_ptr<Core>> cores;
    Core* cur = nullptr;
    uint32_t ub_peak = 0;
    // Scheduler (R4).
    bool active = false;
    uint64_t rng = 0;
    uint32_t current = 0;
    ucontext_t main_ctx;
    std::vector<ucontext_t> ctx;
    std::vector<std::unique_ptr<char[]>> stacks;
    std::vector<bool> done;
    std::function<void()>* kernel = nullptr;
    uint32_t launch_id = 0;  // GM accesses of earlier launches are ordered before this one's
    // R3: per 64-byte GM line written in this launch, the cores that wrote it, by any path and by scalar.
    struct LineUse {
        uint64_t writers = 0, scalar = 0;
    };
    std::unordered_map<uintptr_t, LineUse> lines;
};
inline World& world() {
    static World w;
    return w;
}

inline Core& core() {
    Core* c = world().cur;
    ENEC_SIM_CHECK(c != nullptr, "AscendC API used outside a kernel launch");
    return *c;
}

// ---------------------------------------------------------------------------------------------
// GM: buffers registered by the host driver, each with a hazard shadow (same-core ordering).
// ---------------------------------------------------------------------------------------------

struct Region {
    const uint8_t* p;
    size_t n;
    std::vector<uint32_t> w, r;    // per grain: last writer (stamp << 2 | unit), last MTE2 read
    std::vector<uint8_t> wc, rc;   // the cores of those accesses
    std::vector<uint32_t> wl, rl;  // the launches of those accesses (0: none)
};

inline std::vector<Region>& regions() {
    static std::vector<Region> r;
    return r;
}

inline void gm_register(const void* p, size_t n) {
    Region r{static_cast<const uint8_t*>(p), n, {}, {}, {}, {}, {}, {}};
    size_t grains = (n + GRAIN) / GRAIN + 1;
    r.w.assign(grains, 0);
    r.r.assign(grains, 0);
    r.wc.assign(grains, 0);
    r.rc.assign(grains, 0);
    r.wl.assign(grains, 0);
    r.rl.assign(grains, 0);
    regions().push_back(std::move(r));
}
inline void gm_clear() { regions().clear(); }

inline Region* gm_find(const void* p, size_t n) {
    auto q = static_cast<const uint8_t*>(p);
    for (auto& r : regions())
        if (q >= r.p && q + n <= r.p + r.n) return &r;
    return nullptr;
}

inline void gm_check(const void* p, size_t n, const char* what) {
    if (gm_find(p, n) == nullptr) fail("%s: GM access [%p, +%zu) outside every registered GM buffer", what, p, n);
}

// ---------------------------------------------------------------------------------------------
// R4: the block scheduler
// ---------------------------------------------------------------------------------------------

inline uint64_t next_random() {
    uint64_t& s = world().rng;
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Called before every pipe operation: hands the CPU to the scheduler half of the time.
inline void yield_point() {
    World& w = world();
    if (!w.active || (next_random() & 1) == 0) return;
    swapcontext(&w.ctx[w.current], &w.main_ctx);
}

inline void block_entry() {
    World& w = world();
    (*w.kernel)();
    w.done[w.current] = true;
}

inline void check_lines();

// R2: a DataCopy / DataCopyPad whose UB operand is not in a position its data path lists.
inline void check_path(const Slot* s, uint8_t allowed, const char* what, const char* listed) {
    if (s != nullptr && (s->positions & allowed) == 0)
        hazard("R2 position: %s on a %s buffer: the documented data path is %s", what,
               s->positions & POS_VECCALC ? "VECCALC" : "wrong-position", listed);
}

// Runs `kernel` once per block, GetBlockIdx() = 0 .. blockDim - 1, interleaved in a random order.
template <class F>
void launch(uint32_t block_dim, F kernel) {
    ENEC_SIM_CHECK(block_dim >= 1 && block_dim <= MAX_BLOCKS, "launch with blockDim %u (model: 1..%u)", block_dim,
                   MAX_BLOCKS);
    World& w = world();
    static uint64_t seed = [] {
        const char* e = std::getenv("ENEC_SIM_SEED");
        return e ? std::strtoull(e, nullptr, 0) : 1ull;
    }();
    static uint64_t launches = 0;
    w.rng = seed * 0x100000001B3ull + launches++;
    std::function<void()> fn = kernel;
    w.kernel = &fn;
    constexpr size_t STACK = 1 << 20;
    while (w.cores.size() < block_dim) w.cores.push_back(std::make_unique<Core>());
    while (w.stacks.size() < block_dim) w.stacks.push_back(std::unique_ptr<char[]>(new char[STACK]));
    w.ctx.assign(block_dim, ucontext_t());
    w.done.assign(block_dim, false);
    w.lines.clear();
    w.launch_id++;
    for (uint32_t b = 0; b < block_dim; b++) {
        w.cores[b]->reset(b, block_dim);
        getcontext(&w.ctx[b]);
        w.ctx[b].uc_stack.ss_sp = w.stacks[b].get();
        w.ctx[b].uc_stack.ss_size = STACK;
        w.ctx[b].uc_link = &w.main_ctx;
        makecontext(&w.ctx[b], block_entry, 0);
    }
    w.active = true;
    uint32_t left = block_dim;
    while (left > 0) {
        uint32_t pick = uint32_t(next_random() % left);
        uint32_t b = 0;
        for (;; b++)
            if (!w.done[b] && pick-- == 0) break;
        w.current = b;
        w.cur = w.cores[b].get();
        swapcontext(&w.main_ctx, &w.ctx[b]);
        if (w.done[b]) {
            ENEC_SIM_CHECK(!w.cores[b]->pipe_alive, "block %u returned with its TPipe alive", b);
            left--;
        }
    }
    w.active = false;
    w.cur = nullptr;
    w.kernel = nullptr;
    check_lines();
}

// ---------------------------------------------------------------------------------------------
// R1 / R2 / R3: accesses
// ---------------------------------------------------------------------------------------------

inline uint32_t tag(uint32_t stamp, int u) { return stamp << 2 | uint32_t(u); }
inline uint32_t stamp_of(uint32_t t) { return t >> 2; }
inline int unit_of(uint32_t t) { return int(t & 3); }

// One operand of a pipe instruction.
struct Access {
    bool ub;           // UB (offset) or GM (address)
    const Slot* slot;  // UB: the buffer, for R2 (may be null)
    uintptr_t at;      // UB byte offset or GM address
    uint64_t bytes;
    bool write;
};

inline const char* kind_name(bool earlier_write, bool now_write) {
    return earlier_write ? (now_write ? "write-after-write" : "read-after-write") : "write-after-read";
}

// Pipe `u` executes instruction `what` with these operands.
inline void instr(int u, const char* what, std::initializer_list<Access> ops) {
    yield_point();
    Core& c = core();
    uint32_t stamp = ++c.clk[u].c[u];
    const Clock& mine = c.clk[u];
    if (u == U_V) {
        stats().last_vector = what;
        stats().vector_with_copy_in += mine.c[U_MTE2] < c.clk[U_MTE2].c[U_MTE2];
        stats().vector_with_copy_out += mine.c[U_MTE3] < c.clk[U_MTE3].c[U_MTE3];
    }
    uint8_t me = uint8_t(c.block_idx);
    uint32_t launch = world().launch_id;
    bool dma = u == U_MTE2 || u == U_MTE3;
    for (int pass = 0; pass < 2; pass++) {  // reads first, so an in-place operand is not its own hazard
        for (const Access& a : ops) {
            if (a.write != (pass == 1) || a.bytes == 0) continue;
            if (a.ub && a.slot != nullptr && a.slot->producer != U_NONE && u != a.slot->producer &&
                u != a.slot->consumer)
                hazard("R2 position: %s (%s) %s a queue buffer whose position belongs to %s -> %s", what,
                       unit_name(u), a.write ? "writes" : "reads", unit_name(a.slot->producer),
                       unit_name(a.slot->consumer));
            uint32_t *w, *rv = nullptr, *rm3 = nullptr, *rgm = nullptr, *wl = nullptr, *rl = nullptr;
            uint8_t *wc = nullptr, *rc = nullptr;
            uint64_t g0, g1;
            if (a.ub) {
                w = c.shadow.w.data();
                rv = c.shadow.rv.data();
                rm3 = c.shadow.rm3.data();
                g0 = a.at / GRAIN;
                g1 = (a.at + a.bytes + GRAIN - 1) / GRAIN;
            } else {
                Region* r = gm_find(reinterpret_cast<const void*>(a.at), a.bytes);
                if (r == nullptr) continue;  // checked by the caller
                uintptr_t off = a.at - reinterpret_cast<uintptr_t>(r->p);
                w = r->w.data();
                rgm = r->r.data();
                wc = r->wc.data();
                rc = r->rc.data();
                wl = r->wl.data();
                rl = r->rl.data();
                g0 = off / GRAIN;
                g1 = (off + a.bytes + GRAIN - 1) / GRAIN;
            }
            bool reported = false;
            for (uint64_t g = g0; g < g1; g++) {
                // GM of an earlier launch is ordered; of this launch, another core's is not (R3).
                bool gm_now = !a.ub && wl[g] == launch;
                if (!reported && gm_now && w[g] != 0 && wc[g] != me) {
                    hazard("R3 across cores: %s (core %d, %s) %s GM bytes core %d writes in the same launch "
                           "(GM offset grain %llu)",
                           what, int(me), unit_name(u), a.write ? "writes" : "reads", int(wc[g]),
                           (unsigned long long)g);
                    reported = true;
                }
                if (!reported && a.write && !a.ub && rl[g] == launch && rgm[g] != 0 && rc[g] != me) {
                    hazard("R3 across cores: %s (core %d, %s) writes GM bytes core %d reads in the same launch "
                           "(GM offset grain %llu)",
                           what, int(me), unit_name(u), int(rc[g]), (unsigned long long)g);
                    reported = true;
                }
                // Earlier write by another pipe (RAW / WAW).
                uint32_t t = w[g];
                bool same_core = a.ub || (gm_now && wc[g] == me);
                if (!reported && t != 0 && same_core && unit_of(t) != u && unit_of(t) != U_S &&
                    mine.c[unit_of(t)] < stamp_of(t)) {
                    hazard("R1 %s on %s (grain %llu): %s (%s) after a %s write, no sync between them",
                           kind_name(true, a.write), a.ub ? "UB" : "GM", (unsigned long long)g, what, unit_name(u),
                           unit_name(unit_of(t)));
                    reported = true;
                }
                if (a.write) {
                    // Earlier reads by other pipes (WAR).
                    if (a.ub) {
                        if (!reported && u != U_V && rv[g] != 0 && mine.c[U_V] < rv[g]) {
                            hazard("R1 write-after-read on UB byte +%llu: %s (%s) overwrites what V reads, no sync",
                                   (unsigned long long)(g * GRAIN), what, unit_name(u));
                            reported = true;
                        }
                        if (!reported && u != U_MTE3 && rm3[g] != 0 && mine.c[U_MTE3] < rm3[g]) {
                            hazard("R1 write-after-read on UB byte +%llu: %s (%s) overwrites what MTE3 copies out, "
                                   "no sync",
                                   (unsigned long long)(g * GRAIN), what, unit_name(u));
                            reported = true;
                        }
                    } else if (!reported && u != U_MTE2 && rgm[g] != 0 && rl[g] == launch && rc[g] == me &&
                               mine.c[U_MTE2] < rgm[g]) {
                        hazard("R1 write-after-read on GM: %s (%s) overwrites what MTE2 reads, no sync", what,
                               unit_name(u));
                        reported = true;
                    }
                    // Earlier overlapping write by the same DMA pipe, not yet known complete.
                    if (!reported && dma && t != 0 && same_core && unit_of(t) == u && stamp_of(t) != stamp &&
                        stamp_of(t) > c.done[u]) {
                        hazard("R1 write-after-write on %s (grain %llu): %s (%s) overlaps an earlier %s copy's "
                               "destination, no PipeBarrier<PIPE_%s> between them",
                               a.ub ? "UB" : "GM", (unsigned long long)g, what, unit_name(u), unit_name(u),
                               unit_name(u));
                        reported = true;
                    }
                    w[g] = tag(stamp, u);
                    if (!a.ub) {
                        wc[g] = me;
                        wl[g] = launch;
                    }
                } else if (a.ub) {
                    if (u == U_V) rv[g] = stamp;
                    if (u == U_MTE3) rm3[g] = stamp;
                } else {
                    rgm[g] = stamp;
                    rc[g] = me;
                    rl[g] = launch;
                }
            }
            if (!a.ub && a.write) {
                auto& lines = world().lines;
                for (uintptr_t l = a.at / 64; l <= (a.at + a.bytes - 1) / 64; l++)
                    lines[l].writers |= uint64_t(1) << me;
            }
        }
    }
}

// The compiler's automatic scalar synchronisation: before the scalar unit touches bytes a pipe
// wrote (or, for a write, read), it waits for that pipe; every later instruction is issued after.
// A wait that orders something not yet ordered counts as one flag pair (R7): the compiler
// inserts a SetFlag/WaitFlag there.
inline void scalar_waits(Core& c, int q, uint32_t stamp) {
    if (q == U_S || stamp == 0) return;
    bool waited = false;
    for (auto& k : c.clk)
        if (k.c[q] < stamp) {
            k.c[q] = stamp;
            waited = true;
        }
    if (c.done[q] < stamp) c.done[q] = stamp;
    stats().flag_pairs += waited;
}

// Pipe `p` waits for what clock `o` covers (a flag or queue event): p's own instructions that
// `o` covers are complete before p's next one.
inline void order_after(Core& c, int p, const Clock& o) {
    c.clk[p].join(o);
    if (c.done[p] < o.c[p]) c.done[p] = o.c[p];
}

inline void scalar_ub(uint32_t offset, uint32_t bytes, bool write) {
    Core& c = core();
    stats().scalar_ub++;
    for (uint32_t g = offset / GRAIN; g < (offset + bytes + GRAIN - 1) / GRAIN; g++) {
        uint32_t t = c.shadow.w[g];
        if (t != 0) scalar_waits(c, unit_of(t), stamp_of(t));
        if (write) {
            scalar_waits(c, U_V, c.shadow.rv[g]);
            scalar_waits(c, U_MTE3, c.shadow.rm3[g]);
        }
    }
}

inline void scalar_gm(const void* p, uint32_t bytes, bool write) {
    yield_point();
    Core& c = core();
    stats().scalar_gm++;
    uint8_t me = uint8_t(c.block_idx);
    uint32_t launch = world().launch_id;
    Region* r = gm_find(p, bytes);
    if (r == nullptr) return;
    uintptr_t at = reinterpret_cast<uintptr_t>(p), off = at - reinterpret_cast<uintptr_t>(r->p);
    bool reported = false;
    for (uintptr_t g = off / GRAIN; g < (off + bytes + GRAIN - 1) / GRAIN; g++) {
        bool now = r->wl[g] == launch;
        if (!reported && now && r->w[g] != 0 && r->wc[g] != me) {
            hazard("R3 across cores: scalar %s (core %d) of GM bytes core %d writes in the same launch",
                   write ? "SetValue" : "GetValue", int(me), int(r->wc[g]));
            reported = true;
        }
        if (!reported && write && r->rl[g] == launch && r->r[g] != 0 && r->rc[g] != me) {
            hazard("R3 across cores: scalar SetValue (core %d) of GM bytes core %d reads in the same launch", int(me),
                   int(r->rc[g]));
            reported = true;
        }
        if (now && r->wc[g] == me && r->w[g] != 0) scalar_waits(c, unit_of(r->w[g]), stamp_of(r->w[g]));
        if (write && r->rl[g] == launch && r->rc[g] == me) scalar_waits(c, U_MTE2, r->r[g]);
        if (write) {
            r->w[g] = tag(1, U_S);
            r->wc[g] = me;
            r->wl[g] = launch;
        }
    }
    if (write) {
        auto& lines = world().lines;
        for (uintptr_t l = at / 64; l <= (at + bytes - 1) / 64; l++) {
            lines[l].writers |= uint64_t(1) << me;
            lines[l].scalar |= uint64_t(1) << me;
        }
    }
}

inline void check_lines() {
    for (auto& [line, use] : world().lines) {
        if (use.scalar != 0 && __builtin_popcountll(use.writers) >= 2)
            hazard("R3 data cache: GM line %#llx written by %d cores, by scalar SetValue from core %d: its cache "
                   "line write-back can undo another core's bytes",
                   (unsigned long long)(line * 64), __builtin_popcountll(use.writers), __builtin_ctzll(use.scalar));
    }
    world().lines.clear();
}

// ---------------------------------------------------------------------------------------------
// Ordering events
// ---------------------------------------------------------------------------------------------

inline void pipe_all() {
    yield_point();
    Core& c = core();
    stats().pipe_all++;
    Clock all;
    for (auto& k : c.clk) all.join(k);
    for (auto& k : c.clk) k = all;
    for (int p = 0; p < UNITS; p++) c.done[p] = all.c[p];
}

// PipeBarrier<PIPE_MTE2 / PIPE_V / PIPE_MTE3>: the pipe's next instruction waits for its earlier ones.
inline void pipe_barrier(int p) {
    yield_point();
    Core& c = core();
    c.done[p] = c.clk[p].c[p];
}

inline void set_flag(int src, int dst, int32_t id) {
    yield_point();
    ENEC_SIM_CHECK(id >= 0 && uint32_t(id) < EVENT_IDS, "R6: SetFlag event id %d outside 0..7 (A2)", id);
    Core& c = core();
    ENEC_SIM_CHECK(!c.flag_set[src][dst][id], "SetFlag<%s_%s>(%d) twice without a WaitFlag", unit_name(src),
                   unit_name(dst), id);
    c.flag_set[src][dst][id] = true;
    c.flag[src][dst][id] = c.clk[src];
}

inline void wait_flag(int src, int dst, int32_t id) {
    yield_point();
    ENEC_SIM_CHECK(id >= 0 && uint32_t(id) < EVENT_IDS, "R6: WaitFlag event id %d outside 0..7 (A2)", id);
    Core& c = core();
    ENEC_SIM_CHECK(c.flag_set[src][dst][id], "WaitFlag<%s_%s>(%d) with no SetFlag before it: the pipe would hang",
                   unit_name(src), unit_name(dst), id);
    c.flag_set[src][dst][id] = false;
    stats().flag_pairs++;
    if (dst == U_S) {
        for (int p = 0; p < UNITS; p++) order_after(c, p, c.flag[src][dst][id]);
    } else {
        order_after(c, dst, c.flag[src][dst][id]);
    }
}

inline void count_vector(uint64_t bytes) {
    stats().vector_instr++;
    stats().vector_repeats += (bytes + 255) / 256;
    auto& k = stats().by_kind[stats().last_vector];
    k.first++;
    k.second += (bytes + 255) / 256;
}

inline void count_dma(uint64_t bytes, bool in) {
    stats().dma_ops++;
    stats().dma_bytes += bytes;
    if (in) stats().dma_in_bytes += bytes;
}

}  // namespace ascendc_sim
