// udt4_gen: offline helper (no networking). Produces the same data the peers
// send, for preparing test files and checking a reimplementation:
//   udt4_gen --bytes N [--seed S] [--out FILE]   xorshift64 stream (README)
//   udt4_gen --msg-index I --size S [--out FILE] message I of S bytes
// Prints DONE bytes=<n> fnv1a64=<16 hex> secs=<float>; with --hex (and no
// --out) the bytes are also printed as one line of lowercase hex first.
#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_gen --bytes N [--seed S] [--out FILE] [--hex]\n"
    "       udt4_gen --msg-index I --size S [--out FILE] [--hex]\n";

int main(int argc, char** argv) {
    prog_name() = "udt4_gen";
    Args a(argc, argv,
           {{"bytes", true}, {"seed", true}, {"out", true}, {"hex", false}, {"msg-index", true}, {"size", true}},
           USAGE);
    if (a.has("bytes") == a.has("msg-index")) a.usage_error("give exactly one of --bytes or --msg-index");
    FILE* out = nullptr;
    if (a.has("out")) {
        out = fopen(a.req_str("out").c_str(), "wb");
        if (!out) die("cannot create '%s': %s", a.req_str("out").c_str(), strerror(errno));
    }
    bool hex = a.has("hex") && !out;
    double t0 = now_secs();
    Fnv1a64 h;
    uint64_t total = 0;
    auto emit = [&](const uint8_t* p, size_t n) {
        h.update(p, n);
        if (out && fwrite(p, 1, n, out) != n) die("write failed: %s", strerror(errno));
        if (hex)
            for (size_t i = 0; i < n; ++i) printf("%02x", p[i]);
        total += n;
    };
    if (a.has("bytes")) {
        uint64_t n = a.req_u64("bytes");
        XorShift64 g(seed_opt(a));
        std::vector<uint8_t> buf(1 << 20);
        while (total < n) {
            size_t k = n - total < buf.size() ? static_cast<size_t>(n - total) : buf.size();
            g.fill(buf.data(), k);
            emit(buf.data(), k);
        }
    } else {
        uint64_t idx = a.req_u64("msg-index");
        uint64_t size = a.req_u64("size");
        if (idx > 0xFFFFFFFFULL) a.usage_error("--msg-index must fit in 32 bits");
        if (size < 4 || size > (1u << 30)) a.usage_error("--size must be in [4, 2^30]");
        std::vector<uint8_t> msg(size);
        make_message(static_cast<uint32_t>(idx), msg.data(), size);
        emit(msg.data(), size);
    }
    if (hex) printf("\n");
    if (out && fclose(out) != 0) die("close failed: %s", strerror(errno));
    print_done(total, h, now_secs() - t0);
    return EXIT_OK;
}
