/* udt/udt.h: UDT4 4.11's C++ API (namespace UDT) as inline functions over udt_capi.h, so a
 * program written for UDT4 compiles unchanged and links libudt_capi instead of libudt.
 * Build and link, and what differs from UDT4: docs/capi.md. Not provided: ccc.h (CCC,
 * CCCFactory; UDT_CC takes a congestion-control name here) and UDT4's internal headers. */

#ifndef __UDT_H__
#define __UDT_H__

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "../udt_capi.h"

#define UDT_API
#define NO_BUSY_WAITING

typedef SYSSOCKET UDPSOCKET;

typedef std::set<UDTSOCKET> ud_set;
#define UD_CLR(u, uset) ((uset)->erase(u))
#define UD_ISSET(u, uset) ((uset)->find(u) != (uset)->end())
#define UD_SET(u, uset) ((uset)->insert(u))
#define UD_ZERO(uset) ((uset)->clear())

enum UDTSTATUS { INIT = 1, OPENED, LISTENING, CONNECTING, CONNECTED, BROKEN, CLOSING, CLOSED, NONEXIST };

/* UDTOpt, EPOLLOpt and CPerfMon come from udt_capi.h with UDT4's names and layout. */

class CUDTException {
  public:
    CUDTException(int major = 0, int minor = 0, int err = -1)
        : m_iCode(major < 0 ? -1 : major * 1000 + minor), m_iErrno(err), m_bLast(false) {}
    CUDTException(const CUDTException& e) : m_iCode(e.m_iCode), m_iErrno(e.m_iErrno), m_bLast(false) {}
    CUDTException& operator=(const CUDTException& e) {
        m_iCode = e.m_iCode;
        m_iErrno = e.m_iErrno;
        return *this;
    }
    virtual ~CUDTException() {}

    /* UDT4's text for the error. */
    virtual const char* getErrorMessage() {
        int n = udt_strerror(m_iCode, m_iErrno, NULL, 0);
        std::vector<char> buf(static_cast<size_t>(n) + 1);
        udt_strerror(m_iCode, m_iErrno, &buf[0], n + 1);
        m_strMsg.assign(&buf[0], static_cast<size_t>(n));
        return m_strMsg.c_str();
    }

    /* major * 1000 + minor. */
    virtual int getErrorCode() const { return m_iCode; }

    virtual void clear() {
        m_iCode = 0;
        m_iErrno = 0;
        if (m_bLast) udt_clearlasterror();
    }

    /* The calling thread's last error of the C API (what UDT::getlasterror returns). */
    static CUDTException& last() {
        static thread_local CUDTException e;
        e.m_iCode = udt_getlasterror_code();
        e.m_iErrno = udt_getlasterror_errno();
        e.m_bLast = true;
        return e;
    }

  private:
    int m_iCode;
    int m_iErrno;
    bool m_bLast;
    std::string m_strMsg;

  public:
    static constexpr int SUCCESS = UDT_ERR_SUCCESS;
    static constexpr int ECONNSETUP = UDT_ERR_CONNSETUP;
    static constexpr int ENOSERVER = UDT_ERR_NOSERVER;
    static constexpr int ECONNREJ = UDT_ERR_CONNREJ;
    static constexpr int ESOCKFAIL = UDT_ERR_SOCKFAIL;
    static constexpr int ESECFAIL = UDT_ERR_SECFAIL;
    static constexpr int ECONNFAIL = UDT_ERR_CONNFAIL;
    static constexpr int ECONNLOST = UDT_ERR_CONNLOST;
    static constexpr int ENOCONN = UDT_ERR_NOCONN;
    static constexpr int ERESOURCE = UDT_ERR_RESOURCE;
    static constexpr int ETHREAD = UDT_ERR_THREAD;
    static constexpr int ENOBUF = UDT_ERR_NOBUF;
    static constexpr int EFILE = UDT_ERR_FILE;
    static constexpr int EINVRDOFF = UDT_ERR_INVRDOFF;
    static constexpr int ERDPERM = UDT_ERR_RDPERM;
    static constexpr int EINVWROFF = UDT_ERR_INVWROFF;
    static constexpr int EWRPERM = UDT_ERR_WRPERM;
    static constexpr int EINVOP = UDT_ERR_INVOP;
    static constexpr int EBOUNDSOCK = UDT_ERR_BOUNDSOCK;
    static constexpr int ECONNSOCK = UDT_ERR_CONNSOCK;
    static constexpr int EINVPARAM = UDT_ERR_INVPARAM;
    static constexpr int EINVSOCK = UDT_ERR_INVSOCK;
    static constexpr int EUNBOUNDSOCK = UDT_ERR_UNBOUNDSOCK;
    static constexpr int ENOLISTEN = UDT_ERR_NOLISTEN;
    static constexpr int ERDVNOSERV = UDT_ERR_RDVNOSERV;
    static constexpr int ERDVUNBOUND = UDT_ERR_RDVUNBOUND;
    static constexpr int ESTREAMILL = UDT_ERR_STREAMILL;
    static constexpr int EDGRAMILL = UDT_ERR_DGRAMILL;
    static constexpr int EDUPLISTEN = UDT_ERR_DUPLISTEN;
    static constexpr int ELARGEMSG = UDT_ERR_LARGEMSG;
    static constexpr int EINVPOLLID = UDT_ERR_INVPOLLID;
    static constexpr int EASYNCFAIL = UDT_ERR_ASYNCFAIL;
    static constexpr int EASYNCSND = UDT_ERR_ASYNCSND;
    static constexpr int EASYNCRCV = UDT_ERR_ASYNCRCV;
    static constexpr int ETIMEOUT = UDT_ERR_TIMEOUT;
    static constexpr int EPEERERR = UDT_ERR_PEERERR;
    static constexpr int EUNKNOWN = UDT_ERR_UNKNOWN;
};

#include "udt_namespace.h"

#endif
