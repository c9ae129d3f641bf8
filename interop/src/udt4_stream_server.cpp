// udt4_stream_server: UDT_STREAM listener. Accepts --count connections one
// after another; reads each until the peer closes and prints
//   DONE bytes=<n> fnv1a64=<16 hex> secs=<float>
// per connection (secs: from accept to end of stream). With --echo, every byte
// read is sent back on the same connection.
#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_stream_server [--port P] [--bind ADDR] [--count N] [--echo] [--timeout SECS] [--mss N]\n"
    "  --port P         UDP port to listen on (0 = any; the bound port is printed as READY <port>), default 0\n"
    "  --bind ADDR      local address, default 127.0.0.1\n"
    "  --count N        number of connections to serve one after another, default 1\n"
    "  --echo           send back everything read\n" INTEROP_COMMON_USAGE;

int main(int argc, char** argv) {
    prog_name() = "udt4_stream_server";
    Args a(argc, argv, {{"port", true}, {"bind", true}, {"count", true}, {"echo", false}, INTEROP_COMMON_OPTS}, USAGE);
    uint64_t count = a.u64("count", 1);
    bool echo = a.has("echo");
    Common c = init(a);

    UDTSOCKET l = listen_on(a, "port", false, SOCK_STREAM, c);
    const int BUFSZ = 1 << 20;
    std::vector<uint8_t> buf(BUFSZ);
    for (uint64_t i = 0; i < count; ++i) {
        UDTSOCKET s = accept_one(l, c);
        double t0 = now_secs();
        Fnv1a64 h;
        uint64_t bytes = 0;
        for (;;) {
            int r = recv_some(s, buf.data(), BUFSZ);
            if (r == 0) break;
            h.update(buf.data(), static_cast<size_t>(r));
            bytes += static_cast<uint64_t>(r);
            if (echo) send_all(s, buf.data(), static_cast<size_t>(r));
        }
        double secs = now_secs() - t0;
        print_done(bytes, h, secs);
        close_socket(s);
    }
    close_socket(l);
    finish();
    return EXIT_OK;
}
