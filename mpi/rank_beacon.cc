#include "rank_beacon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

namespace fsrr::mpi {
namespace {

constexpr char goodbye_byte = 'B';
constexpr int addresses_max = 16;

struct wire_address {
  sockaddr_in6 addr{};  // IPv4 as v4-mapped
};

// Rank 0's addresses to try, loopback last: another node reaches one of the others, a rank of
// this node any.
std::vector<wire_address> own_addresses(uint16_t port) {
  std::vector<wire_address> out, loop;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      wire_address w;
      w.addr.sin6_family = AF_INET6;
      w.addr.sin6_port = htons(port);
      if (i->ifa_addr->sa_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
        w.addr.sin6_addr.s6_addr[10] = 0xff;
        w.addr.sin6_addr.s6_addr[11] = 0xff;
        std::memcpy(&w.addr.sin6_addr.s6_addr[12], &v4->sin_addr, 4);
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr)) continue;  // needs a scope: not portable
        w.addr.sin6_addr = v6->sin6_addr;
      } else {
        continue;
      }
      ((i->ifa_flags & IFF_LOOPBACK) ? loop : out).push_back(w);
    }
    ::freeifaddrs(list);
  }
  out.insert(out.end(), loop.begin(), loop.end());
  if (out.size() > addresses_max) out.resize(addresses_max);
  return out;
}

void keepalive(int fd) {
  const int on = 1, idle = 5, interval = 1, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

// A connected socket to `a` within `timeout_ms`, or -1.
int connect_to(const sockaddr_in6& a, int timeout_ms) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (errno != EINPROGRESS || ::poll(&p, 1, timeout_ms) != 1 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      ::close(fd);
      return -1;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  keepalive(fd);
  return fd;
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const char*>(p);
  while (n) {
    const ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

rank_beacon rank_beacon::open(MPI_Comm comm, int rank, int size) {
  rank_beacon b;
  b.linked_.assign(static_cast<size_t>(size), false);
  b.fds_.assign(static_cast<size_t>(size), -1);
  int listener = -1;
  std::vector<wire_address> where(addresses_max);
  int count = 0;
  if (rank == 0 && size > 1) {
    listener = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int off = 0;
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    socklen_t len = sizeof any;
    if (listener >= 0 && ::setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) == 0 &&
        ::bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0 &&
        ::listen(listener, SOMAXCONN) == 0 &&
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&any), &len) == 0) {
      const auto own = own_addresses(ntohs(any.sin6_port));
      count = static_cast<int>(own.size());
      std::copy(own.begin(), own.end(), where.begin());
    }
  }
  MPI_Bcast(&count, 1, MPI_INT, 0, comm);
  MPI_Bcast(where.data(), static_cast<int>(sizeof(wire_address) * addresses_max), MPI_BYTE, 0,
            comm);
  // Rank 0 takes the connections as they come (many ranks would overrun a listen backlog).
  std::atomic<bool> done{false};
  std::atomic<size_t> taken{0};
  std::vector<int> accepted;  // the taker's; read after it is joined
  std::thread taker;
  if (rank == 0 && listener >= 0)
    taker = std::thread([&] {
      while (!done.load()) {
        pollfd p{listener, POLLIN, 0};
        if (::poll(&p, 1, 20) != 1) continue;
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          accepted.push_back(fd);
          taken.fetch_add(1);
        }
      }
    });
  uint8_t mine = 0;
  if (rank != 0)
    for (int i = 0; i < count && b.own_ < 0; ++i) {
      const int fd = connect_to(where[static_cast<size_t>(i)].addr, 500);
      const int32_t id = rank;
      if (fd >= 0 && write_all(fd, &id, sizeof id))
        b.own_ = fd, mine = 1;
      else if (fd >= 0)
        ::close(fd);
    }
  std::vector<uint8_t> all(static_cast<size_t>(size));
  MPI_Allgather(&mine, 1, MPI_BYTE, all.data(), 1, MPI_BYTE, comm);
  if (rank == 0 && listener >= 0) {
    size_t want = 0;
    for (const uint8_t x : all) want += x;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (taken.load() >= want) break;
    }
    done.store(true);
    taker.join();
    ::close(listener);
    for (const int fd : accepted) {  // each says which rank it is
      int32_t id = -1;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 1000) == 1 && ::recv(fd, &id, sizeof id, MSG_WAITALL) == sizeof id &&
          id > 0 && id < size && b.fds_[static_cast<size_t>(id)] < 0) {
        keepalive(fd);
        b.fds_[static_cast<size_t>(id)] = fd;
      } else {
        ::close(fd);
      }
    }
  }
  // Linked: rank 0 holds its connection. Said to all, so that a node's watch leaves it to 0.
  std::vector<uint8_t> held(static_cast<size_t>(size), 0);
  if (rank == 0)
    for (int r = 1; r < size; ++r) held[static_cast<size_t>(r)] = b.fds_[static_cast<size_t>(r)] >= 0;
  MPI_Bcast(held.data(), size, MPI_BYTE, 0, comm);
  for (int r = 0; r < size; ++r) b.linked_[static_cast<size_t>(r)] = held[static_cast<size_t>(r)];
  return b;
}

rank_beacon::rank_beacon(rank_beacon&& o) noexcept
    : linked_(std::move(o.linked_)),
      fds_(std::exchange(o.fds_, {})),
      own_(std::exchange(o.own_, -1)),
      said_goodbye_(o.said_goodbye_) {}

rank_beacon& rank_beacon::operator=(rank_beacon&& o) noexcept {
  if (this != &o) {
    this->~rank_beacon();
    new (this) rank_beacon(std::move(o));
  }
  return *this;
}

rank_beacon::~rank_beacon() {
  for (const int fd : fds_)
    if (fd >= 0) ::close(fd);
  if (own_ >= 0) ::close(own_);
}

void rank_beacon::goodbye() {
  if (own_ < 0 || said_goodbye_) return;
  said_goodbye_ = true;
  write_all(own_, &goodbye_byte, 1);
}

rank_beacon::news rank_beacon::read(int fd) {
  char buf[16];
  const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n > 0) return std::memchr(buf, goodbye_byte, static_cast<size_t>(n)) ? news::left : news::none;
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return news::none;
  if (n < 0 && errno == ETIMEDOUT) return news::unreachable;
  return news::died;
}

}  // namespace fsrr::mpi
