// udt4_recvfile: listens (UDT_STREAM), accepts one connection, reads the
// 8-byte little-endian u64 length header (sent by the peer with UDT::send),
// then receives exactly that many bytes with UDT::recvfile into --out FILE.
// Prints READY <port> when listening and, after the file is complete,
//   DONE bytes=<n> fnv1a64=<16 hex of the file bytes> secs=<float>
// (secs: from accept to the last byte written). Then closes.
#include <fstream>

#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_recvfile --port P --out FILE [--bind ADDR] [--timeout SECS] [--mss N]\n"
    "  --port P         UDP port to listen on (0 = any; printed as READY <port>)\n"
    "  --out FILE       output file (created/truncated)\n"
    "  --bind ADDR      local address, default 127.0.0.1\n" INTEROP_COMMON_USAGE;

int main(int argc, char** argv) {
    prog_name() = "udt4_recvfile";
    Args a(argc, argv, {{"port", true}, {"out", true}, {"bind", true}, INTEROP_COMMON_OPTS}, USAGE);
    std::string out = a.req_str("out");
    Common c = init(a);

    std::fstream ofs(out.c_str(), std::ios::out | std::ios::binary | std::ios::trunc);
    if (!ofs) die("cannot create '%s': %s", out.c_str(), strerror(errno));

    UDTSOCKET l = listen_on(a, "port", true, SOCK_STREAM, c);
    UDTSOCKET s = accept_one(l, c);
    double t0 = now_secs();

    uint8_t hdr[8];
    recv_exact(s, hdr, 8, "the 8-byte length header");
    uint64_t size = 0;
    for (int i = 7; i >= 0; --i) size = (size << 8) | hdr[i];
    if (size > static_cast<uint64_t>(INT64_MAX)) die("absurd file length %" PRIu64, size);

    // recvfile() has no timeout of its own, so receive in bounded chunks and
    // kick the watchdog between them.
    const int64_t CHUNK = 8 << 20;
    int64_t done = 0;
    while (static_cast<uint64_t>(done) < size) {
        int64_t n = static_cast<int64_t>(size) - done < CHUNK ? static_cast<int64_t>(size) - done : CHUNK;
        int64_t off = done;
        Watchdog::kick("UDT::recvfile");
        int64_t r = UDT::recvfile(s, ofs, off, n);
        if (r == UDT::ERROR) {
            int code = last_udt_code();
            if (code == UDT_ECONNLOST || code == UDT_ENOCONN)
                die("connection closed by peer after %" PRId64 " of %" PRIu64 " file bytes", done, size);
            udt_fail("UDT::recvfile");
        }
        if (r <= 0) die("UDT::recvfile made no progress");
        done += r;
    }
    ofs.close();
    if (ofs.fail()) die("error writing '%s'", out.c_str());
    double secs = now_secs() - t0;

    // Hash what actually landed on disk.
    FILE* f = fopen(out.c_str(), "rb");
    if (!f) die("cannot reopen '%s': %s", out.c_str(), strerror(errno));
    std::vector<uint8_t> buf(1 << 20);
    Fnv1a64 h;
    uint64_t total = 0;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) {
        h.update(buf.data(), n);
        total += n;
    }
    fclose(f);
    if (total != size) die("file has %" PRIu64 " bytes, expected %" PRIu64, total, size);
    print_done(total, h, secs);
    close_socket(s);
    close_socket(l);
    finish();
    return EXIT_OK;
}
