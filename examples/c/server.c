/* A UDT server in plain C over udt_capi.h: listens on 127.0.0.1:PORT (0: any free port),
 * prints "READY <port>", receives one connection's bytes until the client closes, and prints
 * "DONE bytes=<n> fnv1a64=<hash>". Build: see docs/capi.md. */

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "udt_capi.h"

static int fail(const char* what) {
    fprintf(stderr, "server: %s: %s (UDT error %d)\n", what, udt_getlasterror_desc(), udt_getlasterror_code());
    return 1;
}

int main(int argc, char** argv) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)(argc > 1 ? atoi(argv[1]) : 0));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    UDTSOCKET listener = udt_socket(AF_INET, SOCK_STREAM, 0);
    if (listener == UDT_INVALID_SOCK) return fail("socket");
    if (udt_bind(listener, (struct sockaddr*)&addr, sizeof addr) == UDT_ERROR) return fail("bind");
    if (udt_listen(listener, 10) == UDT_ERROR) return fail("listen");
    int len = sizeof addr;
    if (udt_getsockname(listener, (struct sockaddr*)&addr, &len) == UDT_ERROR) return fail("getsockname");
    printf("READY %d\n", ntohs(addr.sin_port));
    fflush(stdout);

    UDTSOCKET conn = udt_accept(listener, NULL, NULL);
    if (conn == UDT_INVALID_SOCK) return fail("accept");
    static char buf[1 << 16];
    uint64_t total = 0, hash = 0xcbf29ce484222325ULL;
    for (;;) {
        int n = udt_recv(conn, buf, sizeof buf, 0);
        if (n == UDT_ERROR) {
            /* UDT4 has no end-of-stream value: the peer's close reads as "connection broken". */
            if (udt_getlasterror_code() == UDT_ERR_CONNLOST) break;
            return fail("recv");
        }
        for (int i = 0; i < n; i++) hash = (hash ^ (unsigned char)buf[i]) * 0x100000001b3ULL;
        total += (uint64_t)n;
    }
    printf("DONE bytes=%" PRIu64 " fnv1a64=%016" PRIx64 "\n", total, hash);
    udt_close(conn);
    udt_close(listener);
    udt_cleanup();
    return 0;
}
