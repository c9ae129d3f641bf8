// udt4_sendfile: connects (UDT_STREAM), sends the file length as an 8-byte
// little-endian u64 with UDT::send, then the file contents with
// UDT::sendfile, then closes (linger: waits for the peer's acknowledgement).
// Prints READY <local port> once connected and
//   DONE bytes=<n> fnv1a64=<16 hex of the file bytes> secs=<float>
// (secs: from connected to close() returned).
#include <fstream>

#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_sendfile --connect HOST:PORT --file FILE [--timeout SECS] [--mss N]\n"
    "  --connect HOST:PORT  receiver address (IPv6 as [ADDR]:PORT)\n"
    "  --file FILE      file to send\n" INTEROP_COMMON_USAGE;

int main(int argc, char** argv) {
    prog_name() = "udt4_sendfile";
    Args a(argc, argv, {{"connect", true}, {"file", true}, INTEROP_COMMON_OPTS}, USAGE);
    Addr peer = parse_hostport(a, "connect", a.req_str("connect"));
    std::string path = a.req_str("file");
    Common c = init(a);

    // Hash (and size) the file first.
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) die("cannot open '%s': %s", path.c_str(), strerror(errno));
    std::vector<uint8_t> buf(1 << 20);
    Fnv1a64 h;
    uint64_t size = 0;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) {
        h.update(buf.data(), n);
        size += n;
    }
    if (ferror(f)) die("error reading '%s'", path.c_str());
    fclose(f);

    std::fstream ifs(path.c_str(), std::ios::in | std::ios::binary);
    if (!ifs) die("cannot open '%s': %s", path.c_str(), strerror(errno));

    UDTSOCKET u = connect_to(peer, SOCK_STREAM, c);
    print_ready(u);
    double t0 = now_secs();

    uint8_t hdr[8];
    for (int i = 0; i < 8; ++i) hdr[i] = static_cast<uint8_t>(size >> (8 * i));
    send_all(u, hdr, 8);

    // sendfile() ignores UDT_SNDTIMEO, so send in bounded chunks and kick the
    // watchdog between them.
    const int64_t CHUNK = 8 << 20;
    int64_t done = 0;
    while (static_cast<uint64_t>(done) < size) {
        int64_t want = static_cast<int64_t>(size) - done < CHUNK ? static_cast<int64_t>(size) - done : CHUNK;
        int64_t off = done;
        Watchdog::kick("UDT::sendfile");
        int64_t r = UDT::sendfile(u, ifs, off, want);
        if (r == UDT::ERROR) udt_fail("UDT::sendfile");
        if (r <= 0) die("UDT::sendfile made no progress at offset %" PRId64, done);
        done += r;
    }
    close_socket(u);
    print_done(size, h, now_secs() - t0);
    finish();
    return EXIT_OK;
}
