// udt4_msg_server: UDT_DGRAM listener. Accepts --count connections one after
// another; for each received message prints
//   MSG <index> <len> <ok|corrupt>
// where index is the big-endian u32 in the first 4 bytes (-1 if the message
// is shorter than 4 bytes) and ok means the message equals make_message(index,
// len) (see common.h / README). When the peer closes it prints
//   DONE messages=<n> corrupt=<k> bytes=<total> fnv1a64=<16 hex> secs=<float>
// (hash over all message bytes in arrival order; secs from accept to the last
// message). Exit status 4 if any message was corrupt.
#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_msg_server [--port P] [--bind ADDR] [--count N] [--quiet] [--timeout SECS] [--mss N]\n"
    "  --port P         UDP port to listen on (0 = any; printed as READY <port>), default 0\n"
    "  --bind ADDR      local address, default 127.0.0.1\n"
    "  --count N        number of connections to serve one after another, default 1\n"
    "  --quiet          do not print the per-message MSG lines\n" INTEROP_COMMON_USAGE;

int main(int argc, char** argv) {
    prog_name() = "udt4_msg_server";
    Args a(argc, argv, {{"port", true}, {"bind", true}, {"count", true}, {"quiet", false}, INTEROP_COMMON_OPTS},
           USAGE);
    uint64_t count = a.u64("count", 1);
    bool quiet = a.has("quiet");
    Common c = init(a);

    UDTSOCKET l = listen_on(a, "port", false, SOCK_DGRAM, c);
    // Larger than any message UDT4 can carry with default buffers (8192 packets).
    const int BUFSZ = 64 << 20;
    std::vector<uint8_t> buf(BUFSZ), expect;
    bool any_corrupt = false;
    for (uint64_t i = 0; i < count; ++i) {
        UDTSOCKET s = accept_one(l, c);
        // UDT4 4.11 quirk: with UDT_RCVTIMEO set, a blocking recvmsg() waits on
        // its condition variable *before* looking for a complete message, so
        // messages that are already buffered are not returned until the next
        // ACK/close event and, when the peer closes, a large part of them is
        // never returned at all (observed: ~50-120 of 200 messages). So leave
        // recvmsg() fully blocking and let the watchdog bound it instead.
        set_int_opt_accepted(s, UDT_RCVTIMEO, -1, "setsockopt(UDT_RCVTIMEO)");
        double t0 = now_secs(), tlast = t0;
        Fnv1a64 h;
        uint64_t msgs = 0, corrupt = 0, bytes = 0;
        bool peer_gone = false;
        for (;;) {
            Watchdog::kick("UDT::recvmsg");
            int r = UDT::recvmsg(s, reinterpret_cast<char*>(buf.data()), BUFSZ);
            if (r == UDT::ERROR) {
                int code = last_udt_code();
                if (code == UDT_ECONNLOST || code == UDT_ENOCONN || (peer_gone && code == UDT_EINVSOCK)) {
                    // UDT4 4.11 quirk: a blocking recvmsg() that is woken by
                    // the peer's shutdown fails with ECONNLOST even though
                    // complete messages are still buffered. Calling it again
                    // takes the "broken/closing" path, which returns the
                    // buffered messages one by one and fails only when the
                    // buffer is empty. So the end is the *second* failure.
                    if (peer_gone) break;
                    peer_gone = true;
                    fprintf(stderr, "udt4_msg_server: peer closed: %s (UDT error code %d); draining\n",
                            UDT::getlasterror().getErrorMessage(), code);
                    continue;
                }
                udt_fail("UDT::recvmsg");
            }
            if (r <= 0) die("UDT::recvmsg returned %d", r);
            tlast = now_secs();
            size_t len = static_cast<size_t>(r);
            long long index = -1;
            bool ok = false;
            if (len >= 4) {
                uint32_t idx = (uint32_t(buf[0]) << 24) | (uint32_t(buf[1]) << 16) | (uint32_t(buf[2]) << 8) | buf[3];
                index = idx;
                expect.resize(len);
                make_message(idx, expect.data(), len);
                ok = memcmp(expect.data(), buf.data(), len) == 0;
            }
            h.update(buf.data(), len);
            bytes += len;
            ++msgs;
            if (!ok) ++corrupt;
            if (!quiet) {
                printf("MSG %lld %zu %s\n", index, len, ok ? "ok" : "corrupt");
                // stdout is a pipe to the test: flush each line, or the last lines stay
                // buffered while the test waits for them before closing (a deadlock).
                fflush(stdout);
            }
        }
        printf("DONE messages=%" PRIu64 " corrupt=%" PRIu64 " bytes=%" PRIu64 " fnv1a64=%s secs=%.6f\n", msgs, corrupt,
               bytes, h.hex().c_str(), tlast - t0);
        fflush(stdout);
        if (corrupt) any_corrupt = true;
        close_socket(s);
    }
    close_socket(l);
    finish();
    if (any_corrupt) {
        fprintf(stderr, "udt4_msg_server: ERROR: corrupt messages received\n");
        return EXIT_VERIFY;
    }
    return EXIT_OK;
}
