/* A UDT client in plain C over udt_capi.h: connects to 127.0.0.1:PORT, sends BYTES bytes
 * (a counting pattern), closes (waiting until the server has them all) and prints
 * "DONE bytes=<n> fnv1a64=<hash>". Build: see docs/capi.md. */

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "udt_capi.h"

static int fail(const char* what) {
    fprintf(stderr, "client: %s: %s (UDT error %d)\n", what, udt_getlasterror_desc(), udt_getlasterror_code());
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: client PORT BYTES\n");
        return 2;
    }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(argv[1]));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    uint64_t total = strtoull(argv[2], NULL, 10);

    UDTSOCKET u = udt_socket(AF_INET, SOCK_STREAM, 0);
    if (u == UDT_INVALID_SOCK) return fail("socket");
    if (udt_connect(u, (struct sockaddr*)&addr, sizeof addr) == UDT_ERROR) return fail("connect");

    static char buf[1 << 16];
    uint64_t sent = 0, hash = 0xcbf29ce484222325ULL;
    while (sent < total) {
        int chunk = total - sent < sizeof buf ? (int)(total - sent) : (int)sizeof buf;
        for (int i = 0; i < chunk; i++) {
            buf[i] = (char)((sent + (uint64_t)i) % 251);
            hash = (hash ^ (unsigned char)buf[i]) * 0x100000001b3ULL;
        }
        for (int done = 0; done < chunk;) {
            int n = udt_send(u, buf + done, chunk - done, 0);
            if (n == UDT_ERROR) return fail("send");
            done += n;
        }
        sent += (uint64_t)chunk;
    }
    CPerfMon perf;
    if (udt_perfmon(u, &perf, 0) == UDT_ERROR) return fail("perfmon");
    fprintf(stderr, "client: %" PRId64 " packets sent, %d retransmitted, RTT %.3f ms\n", perf.pktSentTotal,
            perf.pktRetransTotal, perf.msRTT);
    if (udt_close(u) == UDT_ERROR) return fail("close");
    printf("DONE bytes=%" PRIu64 " fnv1a64=%016" PRIx64 "\n", sent, hash);
    udt_cleanup();
    return 0;
}
