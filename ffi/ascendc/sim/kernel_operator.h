// A strict CPU model of exactly the AscendC API subset that ffi/ascendc/kernel/ uses, so the
// unmodified kernel sources compile with the system C++ compiler (C++17) and run on a host CPU.
//
// This file shadows CANN's `kernel_operator.h` when `ffi/ascendc/sim` is first on the include
// path. It is written from Huawei's public asc-devkit API documentation (names, signatures,
// documented constraints for Atlas A2 / dav-2201); it contains no Huawei code.
//
// Semantics follow the documentation; everything the documentation forbids aborts with a message
// (ENEC_SIM_CHECK) instead of silently doing something:
//   * Unified Buffer: 192 KB per core, of which TPipe::InitBuffer may hand out 184 KB (R6).
//   * LocalTensor: every vector/copy operand must start 32-byte aligned; every access is bounds
//     checked against its buffer; a queue tensor may only be touched while allocated or dequeued.
//   * TQue: AllocTensor with every buffer in use, EnQue of a tensor not allocated from the queue,
//     EnQue beyond the depth, DeQue on an empty queue, FreeTensor of a tensor not allocated (or
//     freed twice), a pipe destroyed with tensors still allocated: all abort.
//   * DataCopy: UB address, GM address and length must be multiples of 32 bytes (the GM rule is
//     stricter than the hardware needs; format v1 guarantees it, so the model enforces it).
//   * DataCopyPad: UB address 32-byte aligned, left/right padding at most 32 bytes, GM any.
//   * Vector ops: only the data types the A2 documentation lists (And/Or: int16/uint16 only;
//     Compare: half/float; Cast: the conversions used here that A2 supports, ...).
//   * GM: every access must fall inside a buffer registered by the host driver.
// On top of these, the pipe, position, cache, scheduling, queue and limit rules R1-R7 of
// sim_engine.h: every operation below is tagged with its pipe and its operands, so the model
// reports the races a sequential run cannot show.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "sim_engine.h"

#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t*
#define KERNEL_TASK_TYPE_DEFAULT(x)
// The kernels' count of register-level scalar work (enec_common.h), R7.
#define ENEC_SCALAR_OPS(n) (void)(::ascendc_sim::stats().scalar_ops += uint64_t(n))

namespace ascendc_sim {
// A 16-bit float used only as the Compare operand type. Values are kept as float; conversions
// into it check that the value is exactly representable in IEEE half (|v| <= 2048 integers).
struct half {
    float v = 0;
    half() = default;
    half(float f) : v(f) {
        if (!(f >= -2048.0f && f <= 2048.0f && f == float(int(f))))
            fail("half(%g): this model only holds integers of magnitude <= 2048 exactly", double(f));
    }
    operator float() const { return v; }  // half -> float is exact
};
}  // namespace ascendc_sim

// CANN provides `half` and the pipe names (PIPE_V, PIPE_ALL, ...) at global scope.
using half = ascendc_sim::half;
enum pipe_t : uint8_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL };

namespace AscendC {

using ::half;

enum class TPosition : uint8_t { GM, VECIN, VECOUT, VECCALC, A1, A2, B1, B2, CO1, CO2, MAX };
enum class CMPMODE : uint8_t { LT, GT, EQ, LE, GE, NE };
enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
// Synchronisation events between pipes, named SOURCE_DESTINATION (the destination waits).
enum class HardEvent : uint8_t { MTE2_V, V_MTE2, MTE3_V, V_MTE3, MTE2_MTE3, MTE3_MTE2, S_V, V_S, S_MTE2, MTE2_S,
                                 S_MTE3, MTE3_S };
using TEventID = int8_t;

inline int64_t GetBlockIdx() { return ascendc_sim::core().block_idx; }
inline int64_t GetBlockNum() { return ascendc_sim::core().block_num; }

namespace sim_detail {
constexpr int event_src(HardEvent e) {
    switch (e) {
        case HardEvent::MTE2_V: case HardEvent::MTE2_MTE3: case HardEvent::MTE2_S: return ascendc_sim::U_MTE2;
        case HardEvent::V_MTE2: case HardEvent::V_MTE3: case HardEvent::V_S: return ascendc_sim::U_V;
        case HardEvent::MTE3_V: case HardEvent::MTE3_MTE2: case HardEvent::MTE3_S: return ascendc_sim::U_MTE3;
        default: return ascendc_sim::U_S;
    }
}
constexpr int event_dst(HardEvent e) {
    switch (e) {
        case HardEvent::MTE2_V: case HardEvent::MTE3_V: case HardEvent::S_V: return ascendc_sim::U_V;
        case HardEvent::V_MTE2: case HardEvent::MTE3_MTE2: case HardEvent::S_MTE2: return ascendc_sim::U_MTE2;
        case HardEvent::V_MTE3: case HardEvent::MTE2_MTE3: case HardEvent::S_MTE3: return ascendc_sim::U_MTE3;
        default: return ascendc_sim::U_S;
    }
}
}  // namespace sim_detail

// PIPE_ALL: every pipe waits for every issued instruction. PIPE_MTE2 / PIPE_MTE3 / PIPE_V: that
// pipe's next instruction waits for its earlier ones (R1: overlapping copies of one DMA pipe).
template <pipe_t pipe>
inline void PipeBarrier() {
    static_assert(pipe == PIPE_ALL || pipe == PIPE_MTE2 || pipe == PIPE_MTE3 || pipe == PIPE_V,
                  "PipeBarrier: this model implements PIPE_ALL, PIPE_V, PIPE_MTE2 and PIPE_MTE3");
    if (pipe == PIPE_ALL) ascendc_sim::pipe_all();
    else if (pipe == PIPE_MTE2) ascendc_sim::pipe_barrier(ascendc_sim::U_MTE2);
    else if (pipe == PIPE_MTE3) ascendc_sim::pipe_barrier(ascendc_sim::U_MTE3);
    else ascendc_sim::pipe_barrier(ascendc_sim::U_V);
}

template <HardEvent event>
inline void SetFlag(int32_t eventID) {
    ascendc_sim::set_flag(sim_detail::event_src(event), sim_detail::event_dst(event), eventID);
}

template <HardEvent event>
inline void WaitFlag(int32_t eventID) {
    ascendc_sim::wait_flag(sim_detail::event_src(event), sim_detail::event_dst(event), eventID);
}

template <class T>
class LocalTensor {
public:
    LocalTensor() = default;
    LocalTensor(ascendc_sim::Slot* slot, uint32_t byte_off, uint32_t len) : slot_(slot), off_(byte_off), len_(len) {}

    uint32_t GetSize() const { return len_; }

    T GetValue(uint32_t i) const {
        check_access(i, 1, "LocalTensor::GetValue");
        ascendc_sim::scalar_ub(off_ + i * sizeof(T), sizeof(T), false);
        T v;
        std::memcpy(&v, addr() + i * sizeof(T), sizeof(T));
        return v;
    }
    void SetValue(uint32_t i, T v) const {
        check_access(i, 1, "LocalTensor::SetValue");
        ascendc_sim::scalar_ub(off_ + i * sizeof(T), sizeof(T), true);
        std::memcpy(addr() + i * sizeof(T), &v, sizeof(T));
    }
    LocalTensor operator[](uint32_t i) const {
        ENEC_SIM_CHECK(i <= len_, "LocalTensor[%u] past its %u elements", i, len_);
        return LocalTensor(slot_, off_ + i * sizeof(T), len_ - i);
    }
    template <class U>
    LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(slot_, off_, static_cast<uint32_t>(uint64_t(len_) * sizeof(T) / sizeof(U)));
    }

    // --- model internals (not AscendC API) ---
    uint8_t* addr() const { return ascendc_sim::core().ub + off_; }
    uint32_t ub_offset() const { return off_; }
    ascendc_sim::Slot* slot() const { return slot_; }
    // Checks that elements [i, i + n) may be touched now.
    void check_access(uint64_t i, uint64_t n, const char* what) const {
        ENEC_SIM_CHECK(slot_ != nullptr, "%s on a LocalTensor that was never allocated", what);
        int s = slot_->state;
        ENEC_SIM_CHECK(s == ascendc_sim::SLOT_ALLOCATED || s == ascendc_sim::SLOT_DEQUEUED || s == ascendc_sim::SLOT_TBUF,
                       "%s on a queue tensor that is %s", what,
                       s == ascendc_sim::SLOT_FREE ? "freed" : "enqueued (DeQue it first)");
        ENEC_SIM_CHECK(i + n <= len_, "%s: elements [%llu, %llu) past the tensor's %u", what, (unsigned long long)i,
                       (unsigned long long)(i + n), len_);
    }
    void check_operand(uint64_t n, const char* what) const {
        check_access(0, n, what);
        ENEC_SIM_CHECK(off_ % ascendc_sim::ALIGN == 0, "%s: LocalTensor start (UB offset %u) is not 32-byte aligned",
                       what, off_);
    }
    // Operand descriptors for the hazard detector: the first n elements, read or written.
    ascendc_sim::Access rd(uint64_t n) const { return {true, slot_, off_, n * sizeof(T), false}; }
    ascendc_sim::Access wr(uint64_t n) const { return {true, slot_, off_, n * sizeof(T), true}; }
    T* ptr() const { return reinterpret_cast<T*>(addr()); }

private:
    ascendc_sim::Slot* slot_ = nullptr;
    uint32_t off_ = 0;
    uint32_t len_ = 0;
};

template <class T>
class GlobalTensor {
public:
    void SetGlobalBuffer(__gm__ T* p, uint64_t size) {
        base_ = p;
        size_ = size;
        ascendc_sim::gm_check(p, size * sizeof(T), "GlobalTensor::SetGlobalBuffer");
    }
    void SetGlobalBuffer(__gm__ T* p) {
        base_ = p;
        size_ = UINT64_MAX / 2;
    }
    // Scalar GM accesses go through the core's data cache (R3 watches the writes).
    T GetValue(uint64_t i) const {
        check(i, 1, "GlobalTensor::GetValue");
        ascendc_sim::scalar_gm(base_ + i, sizeof(T), false);
        T v;
        std::memcpy(&v, base_ + i, sizeof(T));
        return v;
    }
    void SetValue(uint64_t i, T v) const {
        check(i, 1, "GlobalTensor::SetValue");
        ascendc_sim::scalar_gm(base_ + i, sizeof(T), true);
        std::memcpy(base_ + i, &v, sizeof(T));
    }
    GlobalTensor operator[](uint64_t i) const {
        GlobalTensor g;
        g.base_ = base_ + i;
        g.size_ = size_ >= i ? size_ - i : 0;
        return g;
    }
    __gm__ T* GetPhyAddr() const { return base_; }
    // model internals
    void check(uint64_t i, uint64_t n, const char* what) const {
        ENEC_SIM_CHECK(i + n <= size_, "%s: elements [%llu, %llu) past the GlobalTensor's %llu", what,
                       (unsigned long long)i, (unsigned long long)(i + n), (unsigned long long)size_);
        ascendc_sim::gm_check(base_ + i, n * sizeof(T), what);
    }
    ascendc_sim::Access rd(uint64_t n) const {
        return {false, nullptr, reinterpret_cast<uintptr_t>(base_), n * sizeof(T), false};
    }
    ascendc_sim::Access wr(uint64_t n) const {
        return {false, nullptr, reinterpret_cast<uintptr_t>(base_), n * sizeof(T), true};
    }

private:
    T* base_ = nullptr;
    uint64_t size_ = 0;
};

class TPipe;
constexpr int kQueMax = 8;

namespace sim_detail {
// The pipe that fills a buffer of position `src` and the one that drains one of position `dst`.
constexpr uint8_t producer_of(TPosition src) {
    return src == TPosition::VECIN ? ascendc_sim::U_MTE2 : ascendc_sim::U_V;
}
constexpr uint8_t consumer_of(TPosition dst) {
    return dst == TPosition::VECOUT ? ascendc_sim::U_MTE3 : ascendc_sim::U_V;
}
constexpr uint8_t position_bit(TPosition p) {
    return p == TPosition::VECIN ? ascendc_sim::POS_VECIN
           : p == TPosition::VECOUT ? ascendc_sim::POS_VECOUT
           : p == TPosition::VECCALC ? ascendc_sim::POS_VECCALC : 0;
}
}  // namespace sim_detail

// A queue between two positions: TQue<POS, DEPTH> is TQueBind<POS, POS, DEPTH>. EnQue -> DeQue
// orders the producer pipe before the consumer pipe (SetFlag/WaitFlag), FreeTensor ->
// AllocTensor the consumer before the producer (the buffer's next fill waits for its last use).
template <TPosition SRC, TPosition DST, int32_t DEPTH>
class TQueBind {
public:
    static constexpr uint8_t kProducer = sim_detail::producer_of(SRC);
    static constexpr uint8_t kConsumer = sim_detail::consumer_of(DST);
    static_assert(kProducer != kConsumer, "TQueBind: a queue between two positions of one pipe orders nothing");

    template <class T>
    LocalTensor<T> AllocTensor() {
        ascendc_sim::yield_point();
        ENEC_SIM_CHECK(num_ > 0, "AllocTensor on a queue without InitBuffer");
        // R5: ring order, from the buffer after the one handed out last.
        for (int k = 0; k < num_; k++) {
            int i = (cursor_ + k) % num_;
            if (slots_[i].state == ascendc_sim::SLOT_FREE) {
                cursor_ = (i + 1) % num_;
                slots_[i].state = ascendc_sim::SLOT_ALLOCATED;
                ascendc_sim::order_after(ascendc_sim::core(), kProducer, slots_[i].freed);
                return LocalTensor<T>(&slots_[i], slots_[i].offset, slots_[i].bytes / sizeof(T));
            }
        }
        ascendc_sim::fail("AllocTensor: all %d buffers of the queue are in use (FreeTensor missing?)", num_);
    }
    template <class T>
    void EnQue(const LocalTensor<T>& t) {
        ascendc_sim::yield_point();
        auto s = own(t.slot(), "EnQue");
        ENEC_SIM_CHECK(s->state == ascendc_sim::SLOT_ALLOCATED, "EnQue of a tensor that is not freshly allocated");
        ENEC_SIM_CHECK(count_ < DEPTH, "R5: EnQue beyond the queue depth %d (DeQue first)", DEPTH);
        s->state = ascendc_sim::SLOT_ENQUEUED;
        s->enqueued = ascendc_sim::core().clk[kProducer];
        fifo_[(head_ + count_) % kMax] = s;
        count_++;
    }
    template <class T>
    LocalTensor<T> DeQue() {
        ascendc_sim::yield_point();
        ENEC_SIM_CHECK(count_ > 0, "DeQue on an empty queue");
        auto s = fifo_[head_];
        head_ = (head_ + 1) % kMax;
        count_--;
        s->state = ascendc_sim::SLOT_DEQUEUED;
        ascendc_sim::order_after(ascendc_sim::core(), kConsumer, s->enqueued);
        return LocalTensor<T>(s, s->offset, s->bytes / sizeof(T));
    }
    template <class T>
    void FreeTensor(const LocalTensor<T>& t) {
        ascendc_sim::yield_point();
        auto s = own(t.slot(), "FreeTensor");
        ENEC_SIM_CHECK(s->state == ascendc_sim::SLOT_ALLOCATED || s->state == ascendc_sim::SLOT_DEQUEUED,
                       "FreeTensor of a tensor that is %s",
                       s->state == ascendc_sim::SLOT_FREE ? "not allocated (double free?)" : "still enqueued");
        s->state = ascendc_sim::SLOT_FREE;
        s->freed = ascendc_sim::core().clk[kConsumer];
    }

private:
    friend class TPipe;
    static constexpr int kMax = kQueMax;
    ascendc_sim::Slot* own(ascendc_sim::Slot* s, const char* what) {
        for (int i = 0; i < num_; i++)
            if (&slots_[i] == s) return s;
        ascendc_sim::fail("%s of a tensor that does not belong to this queue", what);
    }
    ascendc_sim::Slot slots_[kMax];
    ascendc_sim::Slot* fifo_[kMax] = {};
    int num_ = 0, head_ = 0, count_ = 0, cursor_ = 0;
};

template <TPosition POS, int32_t DEPTH>
using TQue = TQueBind<POS, POS, DEPTH>;

template <TPosition POS = TPosition::VECCALC>
class TBuf {
public:
    template <class T>
    LocalTensor<T> Get() {
        ENEC_SIM_CHECK(slot_.bytes > 0, "TBuf::Get without InitBuffer");
        return LocalTensor<T>(&slot_, slot_.offset, slot_.bytes / sizeof(T));
    }
    template <class T>
    LocalTensor<T> Get(uint32_t len) {
        ENEC_SIM_CHECK(len * sizeof(T) <= slot_.bytes, "TBuf::Get(%u) past the buffer's %u bytes", len, slot_.bytes);
        return LocalTensor<T>(&slot_, slot_.offset, len);
    }

private:
    friend class TPipe;
    ascendc_sim::Slot slot_;
};

class TPipe {
public:
    TPipe() {
        auto& c = ascendc_sim::core();
        ENEC_SIM_CHECK(!c.pipe_alive, "a second TPipe on one core");
        c.pipe_alive = true;
        c.tpipe = this;
        c.used = 0;
        c.buffers = 0;
        std::memset(c.ub, 0xA5, sizeof(c.ub));  // UB content is undefined at kernel start
    }
    ~TPipe() {
        for (auto s : live_) {
            if (s->state == ascendc_sim::SLOT_ALLOCATED || s->state == ascendc_sim::SLOT_ENQUEUED ||
                s->state == ascendc_sim::SLOT_DEQUEUED)
                ascendc_sim::fail("TPipe destroyed with a queue tensor still allocated (FreeTensor missing)");
        }
        ascendc_sim::core().pipe_alive = false;
        ascendc_sim::core().tpipe = nullptr;
    }
    // R5: the buffer count is independent of the queue depth.
    template <TPosition SRC, TPosition DST, int32_t DEPTH>
    void InitBuffer(TQueBind<SRC, DST, DEPTH>& q, uint8_t num, uint32_t len) {
        ENEC_SIM_CHECK(num >= 1 && num <= kQueMax, "InitBuffer: %u buffers for one queue (model: 1..%d)", num,
                       kQueMax);
        ENEC_SIM_CHECK(q.num_ == 0, "InitBuffer twice on one queue");
        q.num_ = num;
        for (int i = 0; i < num; i++) {
            q.slots_[i].offset = take(len);
            q.slots_[i].bytes = round(len);
            q.slots_[i].state = ascendc_sim::SLOT_FREE;
            q.slots_[i].producer = q.kProducer;
            q.slots_[i].consumer = q.kConsumer;
            q.slots_[i].positions = sim_detail::position_bit(SRC) | sim_detail::position_bit(DST);
            live_.push_back(&q.slots_[i]);
        }
    }
    template <TPosition POS>
    void InitBuffer(TBuf<POS>& b, uint32_t len) {
        ENEC_SIM_CHECK(b.slot_.bytes == 0, "InitBuffer twice on one TBuf");
        b.slot_.offset = take(len);
        b.slot_.bytes = round(len);
        b.slot_.state = ascendc_sim::SLOT_TBUF;
        b.slot_.positions = sim_detail::position_bit(POS);
    }
    // Event ids for SetFlag/WaitFlag. The model keys flags by (event, id); one id per event type
    // is enough for strictly paired SetFlag/WaitFlag.
    TEventID FetchEventID(HardEvent) { return 0; }

private:
    static uint32_t round(uint32_t len) { return (len + 31) / 32 * 32; }
    uint32_t take(uint32_t len) {
        auto& c = ascendc_sim::core();
        ENEC_SIM_CHECK(len > 0, "InitBuffer of 0 bytes");
        ENEC_SIM_CHECK(++c.buffers <= ascendc_sim::MAX_BUFFERS_PER_PIPE, "R6: more than %u buffers in one TPipe",
                       ascendc_sim::MAX_BUFFERS_PER_PIPE);
        uint32_t limit = ascendc_sim::UB_BYTES_WITH_SCRATCH;  // R6
        uint32_t at = c.used;
        ENEC_SIM_CHECK(uint64_t(at) + round(len) <= limit,
                       "R6: Unified Buffer overflow: %u bytes in use, %u more requested, %u available", at, round(len),
                       limit);
        c.used = at + round(len);
        if (c.used > ascendc_sim::world().ub_peak) ascendc_sim::world().ub_peak = c.used;
        return at;
    }
    std::vector<ascendc_sim::Slot*> live_;
};

inline TPipe* GetTPipePtr() {
    auto* p = static_cast<TPipe*>(ascendc_sim::core().tpipe);
    ENEC_SIM_CHECK(p != nullptr, "GetTPipePtr with no live TPipe");
    return p;
}

// ---------------------------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------------------------

struct DataCopyExtParams {
    uint16_t blockCount = 0;
    uint32_t blockLen = 0;  // bytes
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t src, uint32_t dst, uint32_t r)
        : blockCount(count), blockLen(len), srcStride(src), dstStride(dst), rsv(r) {}
};

template <class T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

namespace sim_detail {
template <class T>
constexpr bool copyable() {
    return std::is_same<T, uint8_t>::value || std::is_same<T, int8_t>::value || std::is_same<T, uint16_t>::value ||
           std::is_same<T, int16_t>::value || std::is_same<T, uint32_t>::value || std::is_same<T, int32_t>::value ||
           std::is_same<T, uint64_t>::value || std::is_same<T, half>::value;
}
inline bool gm_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % ascendc_sim::ALIGN == 0; }
}  // namespace sim_detail

// GM -> UB, `count` elements; count * sizeof(T), the UB and the GM address: multiples of 32 bytes.
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
    static_assert(sim_detail::copyable<T>(), "DataCopy: data type not supported on A2");
    uint64_t bytes = uint64_t(count) * sizeof(T);
    ENEC_SIM_CHECK(bytes % 32 == 0 && bytes > 0, "DataCopy GM->UB of %llu bytes: not a positive multiple of 32",
                   (unsigned long long)bytes);
    dst.check_operand(count, "DataCopy GM->UB destination");
    ENEC_SIM_CHECK(sim_detail::gm_aligned(src.GetPhyAddr()), "DataCopy GM->UB: GM address %p not 32-byte aligned",
                   (const void*)src.GetPhyAddr());
    src.check(0, count, "DataCopy GM->UB source");
    ascendc_sim::check_path(dst.slot(), ascendc_sim::POS_VECIN, "DataCopy GM->UB", "GM -> VECIN");
    ascendc_sim::instr(ascendc_sim::U_MTE2, "DataCopy GM->UB", {src.rd(count), dst.wr(count)});
    ascendc_sim::count_dma(bytes, true);
    std::memcpy(dst.addr(), src.GetPhyAddr(), bytes);
}

// UB -> GM, same rules.
template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    static_assert(sim_detail::copyable<T>(), "DataCopy: data type not supported on A2");
    uint64_t bytes = uint64_t(count) * sizeof(T);
    ENEC_SIM_CHECK(bytes % 32 == 0 && bytes > 0, "DataCopy UB->GM of %llu bytes: not a positive multiple of 32",
                   (unsigned long long)bytes);
    src.check_operand(count, "DataCopy UB->GM source");
    ENEC_SIM_CHECK(sim_detail::gm_aligned(dst.GetPhyAddr()), "DataCopy UB->GM: GM address %p not 32-byte aligned",
                   (const void*)dst.GetPhyAddr());
    dst.check(0, count, "DataCopy UB->GM destination");
    ascendc_sim::check_path(src.slot(), ascendc_sim::POS_VECOUT, "DataCopy UB->GM", "VECOUT -> GM");
    ascendc_sim::instr(ascendc_sim::U_MTE3, "DataCopy UB->GM", {src.rd(count), dst.wr(count)});
    ascendc_sim::count_dma(bytes, false);
    std::memcpy(dst.GetPhyAddr(), src.addr(), bytes);
}

// GM -> UB, any GM address and byte length (one block in this model). The block lands after
// `leftPadding` elements; with isPad the left/right padding holds paddingValue, and the rest of
// the last 32-byte block is undefined (the model fills it with 0xA5 bytes).
template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad) {
    static_assert(sim_detail::copyable<T>(), "DataCopyPad: data type not supported on A2");
    ENEC_SIM_CHECK(p.blockCount == 1, "DataCopyPad: this model supports blockCount 1 only (got %u)", p.blockCount);
    ENEC_SIM_CHECK(p.blockLen > 0 && p.blockLen % sizeof(T) == 0, "DataCopyPad: blockLen %u not a multiple of %zu",
                   p.blockLen, sizeof(T));
    ENEC_SIM_CHECK(pad.leftPadding * sizeof(T) <= 32 && pad.rightPadding * sizeof(T) <= 32,
                   "DataCopyPad: padding of more than 32 bytes");
    uint32_t n = p.blockLen / sizeof(T);
    uint32_t total = pad.leftPadding + n + pad.rightPadding;
    uint32_t rounded = (total * sizeof(T) + 31) / 32 * 32 / sizeof(T);
    dst.check_operand(rounded, "DataCopyPad GM->UB destination");
    src.check(0, n, "DataCopyPad GM->UB source");
    ascendc_sim::check_path(dst.slot(), ascendc_sim::POS_VECIN | ascendc_sim::POS_VECOUT, "DataCopyPad GM->UB",
                            "GM -> VECIN/VECOUT");
    ascendc_sim::instr(ascendc_sim::U_MTE2, "DataCopyPad GM->UB", {src.rd(n), dst.wr(rounded)});
    ascendc_sim::count_dma(p.blockLen, true);
    std::memset(dst.addr(), 0xA5, rounded * sizeof(T));
    if (pad.isPad) {
        for (uint32_t i = 0; i < pad.leftPadding; i++) std::memcpy(dst.addr() + i * sizeof(T), &pad.paddingValue, sizeof(T));
        for (uint32_t i = 0; i < pad.rightPadding; i++)
            std::memcpy(dst.addr() + (pad.leftPadding + n + i) * sizeof(T), &pad.paddingValue, sizeof(T));
    }
    std::memcpy(dst.addr() + pad.leftPadding * sizeof(T), src.GetPhyAddr(), p.blockLen);
}

// UB -> GM, any GM address and byte length (one block).
template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
    static_assert(sim_detail::copyable<T>(), "DataCopyPad: data type not supported on A2");
    ENEC_SIM_CHECK(p.blockCount == 1, "DataCopyPad: this model supports blockCount 1 only (got %u)", p.blockCount);
    ENEC_SIM_CHECK(p.blockLen > 0 && p.blockLen % sizeof(T) == 0, "DataCopyPad: blockLen %u not a multiple of %zu",
                   p.blockLen, sizeof(T));
    uint32_t n = p.blockLen / sizeof(T);
    src.check_operand(n, "DataCopyPad UB->GM source");
    dst.check(0, n, "DataCopyPad UB->GM destination");
    ascendc_sim::check_path(src.slot(), ascendc_sim::POS_VECIN | ascendc_sim::POS_VECOUT, "DataCopyPad UB->GM",
                            "VECIN/VECOUT -> GM");
    ascendc_sim::instr(ascendc_sim::U_MTE3, "DataCopyPad UB->GM", {src.rd(n), dst.wr(n)});
    ascendc_sim::count_dma(p.blockLen, false);
    std::memcpy(dst.GetPhyAddr(), src.addr(), p.blockLen);
}

// ---------------------------------------------------------------------------------------------
// Vector ops ("tensor first n elements" forms). Type lists: Atlas A2 per the API documentation.
// ---------------------------------------------------------------------------------------------

namespace sim_detail {
template <class T, class... U>
constexpr bool one_of() {
    return (std::is_same<T, U>::value || ...);
}
template <class T>
void unary_operands(const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t n, const char* what) {
    ENEC_SIM_CHECK(n > 0, "%s with count %d", what, n);
    dst.check_operand(n, what);
    src.check_operand(n, what);
    ascendc_sim::instr(ascendc_sim::U_V, what, {src.rd(n), dst.wr(n)});
    ascendc_sim::count_vector(uint64_t(n) * sizeof(T));
}
template <class T>
void binary_operands(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, int32_t n,
                     const char* what) {
    ENEC_SIM_CHECK(n > 0, "%s with count %d", what, n);
    dst.check_operand(n, what);
    a.check_operand(n, what);
    b.check_operand(n, what);
    ascendc_sim::instr(ascendc_sim::U_V, what, {a.rd(n), b.rd(n), dst.wr(n)});
    ascendc_sim::count_vector(uint64_t(n) * sizeof(T));
}
}  // namespace sim_detail

template <class T>
inline void Duplicate(const LocalTensor<T>& dst, const T& value, const int32_t& count) {
    static_assert(sim_detail::one_of<T, half, int16_t, uint16_t, int32_t, uint32_t, float>(),
                  "Duplicate: data type not supported on A2");
    ENEC_SIM_CHECK(count > 0, "Duplicate with count %d", count);
    dst.check_operand(count, "Duplicate");
    ascendc_sim::instr(ascendc_sim::U_V, "Duplicate", {dst.wr(count)});
    ascendc_sim::count_vector(uint64_t(count) * sizeof(T));
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = value;
}

// dst[i] = firstValue + i (A2: half/int16/float/int32; the integer forms are modelled).
template <class T>
inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t>(), "CreateVecIndex: this model implements int16/int32");
    ENEC_SIM_CHECK(count > 0, "CreateVecIndex with count 0");
    dst.check_operand(count, "CreateVecIndex");
    ENEC_SIM_CHECK(int64_t(firstValue) + count - 1 <= std::numeric_limits<T>::max(), "CreateVecIndex overflow");
    ascendc_sim::instr(ascendc_sim::U_V, "CreateVecIndex", {dst.wr(count)});
    ascendc_sim::count_vector(uint64_t(count) * sizeof(T));
    for (uint32_t i = 0; i < count; i++) dst.ptr()[i] = T(firstValue + T(i));
}

template <class T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                      const int32_t& count) {
    static_assert(sim_detail::one_of<T, uint16_t, int16_t, uint32_t, int32_t>(),
                  "ShiftLeft: A2 supports uint16/int16/uint32/int32 only");
    sim_detail::unary_operands(dst, src, count, "ShiftLeft");
    ENEC_SIM_CHECK(uint64_t(scalarValue) < sizeof(T) * 8, "ShiftLeft by %llu bits on a %zu-bit type",
                   (unsigned long long)scalarValue, sizeof(T) * 8);
    // Unsigned: logical shift. Signed: arithmetic shift, which keeps the sign bit and drops the
    // bits below it (the ShiftLeft page: int16 1010101010101010 << 1 = 1101010101010100).
    using U = std::make_unsigned_t<T>;
    for (int32_t i = 0; i < count; i++) {
        U v = U(U(src.ptr()[i]) << scalarValue);
        if (std::is_signed<T>::value) {
            U sign = U(U(1) << (sizeof(T) * 8 - 1));
            v = U((v & U(~sign)) | (U(src.ptr()[i]) & sign));
        }
        dst.ptr()[i] = T(v);
    }
}

template <class T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                       const int32_t& count) {
    static_assert(sim_detail::one_of<T, uint16_t, int16_t, uint32_t, int32_t>(),
                  "ShiftRight: A2 supports uint16/int16/uint32/int32 only");
    sim_detail::unary_operands(dst, src, count, "ShiftRight");
    ENEC_SIM_CHECK(uint64_t(scalarValue) < sizeof(T) * 8, "ShiftRight by %llu bits on a %zu-bit type",
                   (unsigned long long)scalarValue, sizeof(T) * 8);
    // Unsigned: logical shift; signed: arithmetic shift (documented).
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = T(src.ptr()[i] >> scalarValue);
}

template <class T>
inline void And(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, uint16_t>(), "And: A2 supports int16/uint16 only");
    sim_detail::binary_operands(dst, a, b, count, "And");
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = T(a.ptr()[i] & b.ptr()[i]);
}

template <class T>
inline void Or(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, uint16_t>(), "Or: A2 supports int16/uint16 only");
    sim_detail::binary_operands(dst, a, b, count, "Or");
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = T(a.ptr()[i] | b.ptr()[i]);
}

// int16/int32 arithmetic: the model aborts on overflow, so kernels cannot rely on a wrap or a
// saturation the documentation does not promise.
template <class T>
inline void Sub(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t>(), "Sub: integer forms on A2 are int16/int32");
    sim_detail::binary_operands(dst, a, b, count, "Sub");
    for (int32_t i = 0; i < count; i++) {
        int64_t r = int64_t(a.ptr()[i]) - int64_t(b.ptr()[i]);
        ENEC_SIM_CHECK(r >= std::numeric_limits<T>::min() && r <= std::numeric_limits<T>::max(), "Sub overflow");
        dst.ptr()[i] = T(r);
    }
}

template <class T>
inline void Add(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t>(), "Add: integer forms on A2 are int16/int32");
    sim_detail::binary_operands(dst, a, b, count, "Add");
    for (int32_t i = 0; i < count; i++) {
        int64_t r = int64_t(a.ptr()[i]) + int64_t(b.ptr()[i]);
        ENEC_SIM_CHECK(r >= std::numeric_limits<T>::min() && r <= std::numeric_limits<T>::max(), "Add overflow");
        dst.ptr()[i] = T(r);
    }
}

// Muls: the product must fit the type (the documentation promises no wrap-around).
template <class T>
inline void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t>(), "Muls: integer forms on A2 are int16/int32");
    sim_detail::unary_operands(dst, src, count, "Muls");
    for (int32_t i = 0; i < count; i++) {
        int64_t r = int64_t(src.ptr()[i]) * int64_t(scalarValue);
        ENEC_SIM_CHECK(r >= std::numeric_limits<T>::min() && r <= std::numeric_limits<T>::max(), "Muls overflow");
        dst.ptr()[i] = T(r);
    }
}

template <class T>
inline void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t>(), "Adds: integer forms on A2 are int16/int32");
    sim_detail::unary_operands(dst, src, count, "Adds");
    for (int32_t i = 0; i < count; i++) {
        int64_t r = int64_t(src.ptr()[i]) + int64_t(scalarValue);
        ENEC_SIM_CHECK(r >= std::numeric_limits<T>::min() && r <= std::numeric_limits<T>::max(), "Adds overflow");
        dst.ptr()[i] = T(r);
    }
}

template <class T>
inline void Mins(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t>(), "Mins: integer forms on A2 are int16/int32");
    sim_detail::unary_operands(dst, src, count, "Mins");
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = src.ptr()[i] < scalarValue ? src.ptr()[i] : scalarValue;
}

// Cast: the one conversion the kernels use, int16_t -> half (exact for |v| <= 2048).
template <class D, class S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& mode, const uint32_t& count) {
    static_assert(std::is_same<D, half>::value && std::is_same<S, int16_t>::value,
                  "Cast: this model implements int16_t -> half only");
    (void)mode;
    ENEC_SIM_CHECK(count > 0, "Cast with count 0");
    dst.check_operand(count, "Cast destination");
    src.check_operand(count, "Cast source");
    ascendc_sim::instr(ascendc_sim::U_V, "Cast", {src.rd(count), dst.wr(count)});
    ascendc_sim::count_vector(uint64_t(count) * sizeof(S));
    for (uint32_t i = 0; i < count; i++) {
        int16_t v = src.ptr()[i];
        ENEC_SIM_CHECK(v >= -2048 && v <= 2048, "Cast int16->half of %d: not exact in this model", v);
        dst.ptr()[i].v = float(v);
    }
}

// Compare: half/float sources, uint8 bit-mask destination (little-endian bit order), count
// elements occupying a multiple of 256 bytes.
template <class T, class U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, CMPMODE mode,
                    uint32_t count) {
    static_assert(sim_detail::one_of<T, half, float>(), "Compare: A2 supports half/float (int32 EQ only)");
    static_assert(sim_detail::one_of<U, uint8_t, int8_t>(), "Compare: destination must be uint8/int8");
    ENEC_SIM_CHECK(count > 0 && (count * sizeof(T)) % 256 == 0,
                   "Compare: count %u elements is not a multiple of 256 bytes", count);
    a.check_operand(count, "Compare");
    b.check_operand(count, "Compare");
    dst.check_operand(count / 8, "Compare destination");
    ascendc_sim::instr(ascendc_sim::U_V, "Compare", {a.rd(count), b.rd(count), dst.wr(count / 8)});
    ascendc_sim::count_vector(uint64_t(count) * sizeof(T));
    auto value = [](const T& x) -> float {
        if constexpr (std::is_same<T, half>::value) return x.v; else return x;
    };
    for (uint32_t i = 0; i < count; i += 8) {
        uint8_t byte = 0;
        for (uint32_t k = 0; k < 8; k++) {
            float x = value(a.ptr()[i + k]), y = value(b.ptr()[i + k]);
            bool r = false;
            switch (mode) {
                case CMPMODE::LT: r = x < y; break;
                case CMPMODE::GT: r = x > y; break;
                case CMPMODE::EQ: r = x == y; break;
                case CMPMODE::LE: r = x <= y; break;
                case CMPMODE::GE: r = x >= y; break;
                case CMPMODE::NE: r = x != y; break;
            }
            byte |= uint8_t(r) << k;
        }
        dst.ptr()[i / 8] = U(byte);
    }
}

// Gather: dst[i] = element at byte offset srcOffset[i] + srcBaseAddr from the start of src.
template <class T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count) {
    static_assert(sim_detail::one_of<T, int16_t, uint16_t, int32_t, uint32_t, float, half>(),
                  "Gather: data type not supported on A2");
    ENEC_SIM_CHECK(count > 0, "Gather with count 0");
    dst.check_operand(count, "Gather destination");
    srcOffset.check_operand(count, "Gather offsets");
    src.check_operand(1, "Gather source");
    uint64_t repeats = (uint64_t(count) * sizeof(T) + 255) / 256;
    ENEC_SIM_CHECK(repeats <= 255, "R6: Gather of %u elements is %llu repeats (at most 255)", count,
                   (unsigned long long)repeats);
    // The source span actually read: from the lowest to the highest offset.
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t at = uint64_t(srcOffset.ptr()[i]) + srcBaseAddr;
        ENEC_SIM_CHECK(at % sizeof(T) == 0, "Gather: offset %llu not aligned to the element size",
                       (unsigned long long)at);
        ENEC_SIM_CHECK(at / sizeof(T) < src.GetSize(), "Gather: offset %llu past the source's %u elements",
                       (unsigned long long)at, src.GetSize());
        lo = at < lo ? at : lo;
        hi = at > hi ? at : hi;
    }
    ascendc_sim::Access read = src.rd(0);
    read.at += lo;
    read.bytes = hi + sizeof(T) - lo;
    ascendc_sim::instr(ascendc_sim::U_V, "Gather", {read, srcOffset.rd(count), dst.wr(count)});
    ascendc_sim::count_vector(uint64_t(count) * sizeof(T));
    // Through a copy: dst may overlap src.
    std::vector<T> got(count);
    for (uint32_t i = 0; i < count; i++)
        std::memcpy(&got[i], src.addr() + uint64_t(srcOffset.ptr()[i]) + srcBaseAddr, sizeof(T));
    std::memcpy(dst.addr(), got.data(), count * sizeof(T));
}

// ---------------------------------------------------------------------------------------------
// Element-wise Max / Min, reductions and mask compaction (the encoder's statistics and planes)
// ---------------------------------------------------------------------------------------------

template <class T>
inline void Max(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t, float>(), "Max: A2 forms are half/int16/int32/float");
    sim_detail::binary_operands(dst, a, b, count, "Max");
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = a.ptr()[i] > b.ptr()[i] ? a.ptr()[i] : b.ptr()[i];
}

template <class T>
inline void Min(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count) {
    static_assert(sim_detail::one_of<T, int16_t, int32_t, float>(), "Min: A2 forms are half/int16/int32/float");
    sim_detail::binary_operands(dst, a, b, count, "Min");
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = a.ptr()[i] < b.ptr()[i] ? a.ptr()[i] : b.ptr()[i];
}

// ReduceMax / ReduceMin over the first `count` elements: the result lands in dst[0] (its index in
// dst[1] with calIndex). workLocal is scratch the instruction may overwrite.
namespace sim_detail {
template <class T, class Better>
void reduce(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t count,
            bool calIndex, Better better, const char* what) {
    static_assert(one_of<T, half, float>(), "ReduceMax/ReduceMin: A2 supports half/float");
    ENEC_SIM_CHECK(count > 0, "%s with count %d", what, count);
    src.check_operand(count, what);
    dst.check_operand(calIndex ? 2 : 1, what);
    work.check_operand(count, what);
    // The scratch use is not documented element by element: all of it counts as written.
    ascendc_sim::instr(ascendc_sim::U_V, what, {src.rd(count), work.wr(count), dst.wr(calIndex ? 2 : 1)});
    ascendc_sim::count_vector(uint64_t(count) * sizeof(T));
    int32_t at = 0;
    for (int32_t i = 1; i < count; i++)
        if (better(float(src.ptr()[i]), float(src.ptr()[at]))) at = i;
    T best = src.ptr()[at];
    dst.ptr()[0] = best;
    if (calIndex) dst.ptr()[1] = T(float(at));
}
}  // namespace sim_detail

template <class T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, bool calIndex = false) {
    sim_detail::reduce(dst, src, workLocal, count, calIndex, [](float a, float b) { return a > b; }, "ReduceMax");
}

template <class T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, bool calIndex = false) {
    sim_detail::reduce(dst, src, workLocal, count, calIndex, [](float a, float b) { return a < b; }, "ReduceMin");
}

struct GatherMaskParams {
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 1;
    uint16_t src0RepeatStride = 0;
    uint8_t src1RepeatStride = 0;
    GatherMaskParams() = default;
    GatherMaskParams(uint8_t blockStride, uint16_t repeat, uint16_t src0Repeat, uint8_t src1Repeat)
        : src0BlockStride(blockStride), repeatTimes(repeat), src0RepeatStride(src0Repeat), src1RepeatStride(src1Repeat) {}
};

// GatherMask with a user pattern (bit i of src1Pattern selects src0[i]; 16-bit data takes a uint16
// pattern, 32-bit data a uint32 one), in counter mode (reduceMode true) with one repeat of `mask`
// elements, the form the kernels use: the selected elements are written to dst in order and
// rsvdCnt is their number. dst past rsvdCnt is undefined (the model leaves it unchanged).
template <class T, class U>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& params, uint64_t& rsvdCnt) {
    static_assert(sim_detail::one_of<T, half, uint16_t, int16_t, float, uint32_t, int32_t>(),
                  "GatherMask: data type not supported on A2");
    static_assert(sizeof(U) == sizeof(T) && sim_detail::one_of<U, uint16_t, uint32_t>(),
                  "GatherMask: the pattern is uint16 for 16-bit data and uint32 for 32-bit data");
    ENEC_SIM_CHECK(reduceMode, "GatherMask: this model implements counter mode (reduceMode true) only");
    ENEC_SIM_CHECK(params.repeatTimes == 1 && params.src0BlockStride == 1,
                   "GatherMask: this model implements one repeat of contiguous elements only");
    ENEC_SIM_CHECK(mask > 0, "GatherMask with mask 0");
    src0.check_operand(mask, "GatherMask src0");
    src1Pattern.check_operand((mask + 8 * sizeof(U) - 1) / (8 * sizeof(U)), "GatherMask pattern");
    dst.check_operand(1, "GatherMask dst");
    uint32_t patternElems = (mask + 8 * sizeof(U) - 1) / (8 * sizeof(U));
    const uint8_t* bits = reinterpret_cast<const uint8_t*>(src1Pattern.ptr());
    std::vector<T> kept;
    for (uint32_t i = 0; i < mask; i++)
        if ((bits[i / 8] >> (i % 8)) & 1) kept.push_back(src0.ptr()[i]);
    if (!kept.empty()) dst.check_operand(kept.size(), "GatherMask dst");
    ascendc_sim::instr(ascendc_sim::U_V, "GatherMask",
                       {src0.rd(mask), src1Pattern.rd(patternElems), dst.wr(kept.size())});
    ascendc_sim::count_vector(uint64_t(mask) * sizeof(T));
    std::memcpy(dst.addr(), kept.data(), kept.size() * sizeof(T));
    // rsvdCnt is read from the vector unit: the scalar unit waits for this instruction.
    ascendc_sim::Core& c = ascendc_sim::core();
    ascendc_sim::scalar_waits(c, ascendc_sim::U_V, c.clk[ascendc_sim::U_V].c[ascendc_sim::U_V]);
    rsvdCnt = kept.size();
}

// ---------------------------------------------------------------------------------------------
// Scalar helpers
// ---------------------------------------------------------------------------------------------

// Position of the first bit equal to `countValue` counting from bit 0, or -1 if there is none.
template <int countValue>
inline int64_t ScalarGetSFFValue(uint64_t valueIn) {
    static_assert(countValue == 0 || countValue == 1, "ScalarGetSFFValue<0 or 1>");
    uint64_t v = countValue == 1 ? valueIn : ~valueIn;
    return v == 0 ? -1 : int64_t(__builtin_ctzll(v));
}

// Number of bits equal to `countValue`.
template <int countValue>
inline int64_t ScalarGetCountOfValue(uint64_t valueIn) {
    static_assert(countValue == 0 || countValue == 1, "ScalarGetCountOfValue<0 or 1>");
    return countValue == 1 ? __builtin_popcountll(valueIn) : 64 - __builtin_popcountll(valueIn);
}

}  // namespace AscendC
