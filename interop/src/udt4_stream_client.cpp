// udt4_stream_client: connects (UDT_STREAM), sends --bytes N bytes of the
// xorshift64 stream seeded with --seed S (see common.h / README), closes
// (UDT linger waits until the peer has acknowledged everything) and prints
//   READY <local port>                                (once connected)
//   DONE bytes=<n> fnv1a64=<16 hex> secs=<float>      (hash of the bytes sent)
// secs: from connected to close() returned. With --echo it also reads N bytes
// back concurrently (separate thread) and verifies them (exit 4 on mismatch).
#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_stream_client --connect HOST:PORT --bytes N [--seed S] [--echo] [--timeout SECS] [--mss N]\n"
    "  --connect HOST:PORT  server address (IPv6 as [ADDR]:PORT)\n"
    "  --bytes N        number of payload bytes to send\n"
    "  --seed S         xorshift64 seed (non-zero), default 1\n"
    "  --echo           read N bytes back and check they equal what was sent\n" INTEROP_COMMON_USAGE;

int main(int argc, char** argv) {
    prog_name() = "udt4_stream_client";
    Args a(argc, argv, {{"connect", true}, {"bytes", true}, {"seed", true}, {"echo", false}, INTEROP_COMMON_OPTS},
           USAGE);
    Addr peer = parse_hostport(a, "connect", a.req_str("connect"));
    uint64_t total = a.req_u64("bytes");
    uint64_t seed = seed_opt(a);
    bool echo = a.has("echo");
    Common c = init(a);

    UDTSOCKET u = connect_to(peer, SOCK_STREAM, c);
    print_ready(u);
    double t0 = now_secs();

    // Echo reader: regenerates the stream and compares.
    std::atomic<int> echo_status(0);  // 0 running/ok, 1 mismatch, 2 short
    uint64_t echo_bad_offset = 0, echo_got = 0;
    std::thread reader;
    if (echo) {
        reader = std::thread([&] {
            const int RB = 1 << 20;
            std::vector<uint8_t> rb(RB), expect(RB);
            XorShift64 g(seed);
            uint64_t got = 0;
            while (got < total) {
                uint64_t want = total - got;
                int r = recv_some(u, rb.data(), want < static_cast<uint64_t>(RB) ? static_cast<int>(want) : RB);
                if (r == 0) {
                    echo_got = got;
                    echo_status = 2;
                    return;
                }
                g.fill(expect.data(), static_cast<size_t>(r));
                if (memcmp(rb.data(), expect.data(), static_cast<size_t>(r)) != 0) {
                    for (int i = 0; i < r; ++i)
                        if (rb[i] != expect[i]) {
                            echo_bad_offset = got + static_cast<uint64_t>(i);
                            break;
                        }
                    echo_status = 1;
                    return;
                }
                got += static_cast<uint64_t>(r);
            }
            echo_got = got;
        });
    }

    const size_t CHUNK = 1 << 20;
    std::vector<uint8_t> buf(CHUNK);
    XorShift64 g(seed);
    Fnv1a64 h;
    uint64_t sent = 0;
    while (sent < total) {
        size_t n = total - sent < CHUNK ? static_cast<size_t>(total - sent) : CHUNK;
        g.fill(buf.data(), n);
        h.update(buf.data(), n);
        send_all(u, buf.data(), n);
        sent += n;
    }
    if (echo) {
        Watchdog::kick("waiting for echoed data");
        reader.join();
        if (echo_status == 1)
            die_code(EXIT_VERIFY, "echo mismatch: first differing byte at offset %" PRIu64, echo_bad_offset);
        if (echo_status == 2)
            die_code(EXIT_VERIFY, "echo short: connection closed after %" PRIu64 " of %" PRIu64 " bytes", echo_got,
                     total);
    }
    close_socket(u);
    print_done(sent, h, now_secs() - t0);
    finish();
    return EXIT_OK;
}
