#pragma once
// A name -> id index that holds no names: a power-of-two array of slots, each 0 (empty) or the
// name's 32-bit hash in the high half and id + 1 in the low half, probed linearly, at a load of
// at most one half. The names stay where their owner keeps them (a graph's nodes and tensors, a
// model file's declarations); `find` reads them through `name_of(id)`. One lookup touches one
// cache line of slots and one name, where a std::unordered_map of strings chases a node per entry
// and copies every key (issue #20: a 200,000-node model file).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace roofline {

// A hash of a name for the name tables (issue #20: std::hash's murmur, _Hash_bytes, was the
// command line's largest single function): eight bytes at a time, each word mixed in by an
// invertible multiply and shift (names that differ in one word never collide), then a final mix
// that spreads every input bit over the low bits the tables index by. Not meant for hostile input.
inline std::uint64_t name_hash(std::string_view s) {
    constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
    std::uint64_t h = s.size() ^ 0x243F6A8885A308D3ull;
    const auto mix = [&](std::uint64_t w) {
        h = (h ^ w) * kMul;
        h ^= h >> 31;
    };
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        std::uint64_t w = 0;
        std::memcpy(&w, s.data() + i, 8);
        mix(w);
    }
    if (i < s.size()) {
        std::uint64_t w = 0;
        std::memcpy(&w, s.data() + i, s.size() - i);
        mix(w);
    }
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

class NameTable {
public:
    // Room for `count` names without growing.
    void reserve(std::size_t count) {
        if (2 * count <= slots_.size()) return;  // the common case, on every name added
        std::size_t size = 16;
        while (size < 2 * count) size *= 2;
        std::vector<std::uint64_t> old(size, 0);
        old.swap(slots_);
        for (std::uint64_t s : old) {
            if (s != 0) place(static_cast<std::uint32_t>(s >> 32), static_cast<std::uint32_t>(s));
        }
    }

    // Adds `id` under `name` (the caller has checked with find that it is new).
    void insert(std::string_view name, std::int32_t id) {
        reserve(count_ + 1);
        place(hash(name), static_cast<std::uint32_t>(id) + 1);
        ++count_;
    }

    // The id stored under `name`, or -1.
    template <class NameOf>
    std::int32_t find(std::string_view name, NameOf&& name_of) const {
        if (slots_.empty()) return -1;
        const std::uint32_t h = hash(name);
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = h & mask;; i = (i + 1) & mask) {
            const std::uint64_t s = slots_[i];
            if (s == 0) return -1;
            if (static_cast<std::uint32_t>(s >> 32) == h) {
                const auto id = static_cast<std::int32_t>(static_cast<std::uint32_t>(s) - 1);
                if (std::string_view(name_of(id)) == name) return id;
            }
        }
    }

    std::size_t size() const { return count_; }

private:
    static std::uint32_t hash(std::string_view name) { return static_cast<std::uint32_t>(name_hash(name)); }

    void place(std::uint32_t h, std::uint32_t id_plus_one) {
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = h & mask;
        while (slots_[i] != 0) i = (i + 1) & mask;
        slots_[i] = (static_cast<std::uint64_t>(h) << 32) | id_plus_one;
    }

    std::vector<std::uint64_t> slots_;
    std::size_t count_ = 0;
};

}  // namespace roofline
