// udt4_msg_client: connects a UDT_DGRAM socket and sends --count messages of
// --size bytes with UDT::sendmsg(ttl, inorder); message i is
// make_message(i, size): big-endian u32 i, then the first size-4 bytes of the
// xorshift64 stream seeded with (i+1)*0x9E3779B97F4A7C15 (see common.h).
// Closes (linger) and prints READY <local port> once connected and
//   DONE messages=<n> bytes=<n*size> fnv1a64=<16 hex of all messages in order> secs=<float>
#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_msg_client --connect HOST:PORT --count N --size S [--ttl MS] [--inorder] [--timeout SECS] [--mss N]\n"
    "  --connect HOST:PORT  server address (IPv6 as [ADDR]:PORT)\n"
    "  --count N        number of messages\n"
    "  --size S         bytes per message (>= 4)\n"
    "  --ttl MS         message time-to-live in ms (sendmsg ttl), default -1 = forever\n"
    "  --inorder        request in-order delivery (sendmsg inorder=true)\n" INTEROP_COMMON_USAGE;

int main(int argc, char** argv) {
    prog_name() = "udt4_msg_client";
    Args a(argc, argv,
           {{"connect", true}, {"count", true}, {"size", true}, {"ttl", true}, {"inorder", false}, INTEROP_COMMON_OPTS},
           USAGE);
    Addr peer = parse_hostport(a, "connect", a.req_str("connect"));
    uint64_t count = a.req_u64("count");
    uint64_t size = a.req_u64("size");
    if (count > 0xFFFFFFFFULL) a.usage_error("--count must fit in 32 bits");
    if (size < 4 || size > (1u << 30)) a.usage_error("--size must be in [4, 2^30]");
    int ttl = -1;
    if (a.has("ttl")) {
        uint64_t t = a.u64("ttl", 0);
        if (t > INT_MAX) a.usage_error("--ttl too large");
        ttl = static_cast<int>(t);
    }
    bool inorder = a.has("inorder");
    Common c = init(a);

    UDTSOCKET u = connect_to(peer, SOCK_DGRAM, c);
    print_ready(u);
    double t0 = now_secs();
    std::vector<uint8_t> msg(size);
    Fnv1a64 h;
    for (uint64_t i = 0; i < count; ++i) {
        make_message(static_cast<uint32_t>(i), msg.data(), size);
        h.update(msg.data(), size);
        Watchdog::kick("UDT::sendmsg");
        int r = UDT::sendmsg(u, reinterpret_cast<const char*>(msg.data()), static_cast<int>(size), ttl, inorder);
        if (r == UDT::ERROR) udt_fail("UDT::sendmsg");
        if (r != static_cast<int>(size)) die("UDT::sendmsg returned %d for a %" PRIu64 "-byte message", r, size);
    }
    close_socket(u);
    printf("DONE messages=%" PRIu64 " bytes=%" PRIu64 " fnv1a64=%s secs=%.6f\n", count, count * size, h.hex().c_str(),
           now_secs() - t0);
    fflush(stdout);
    finish();
    return EXIT_OK;
}
