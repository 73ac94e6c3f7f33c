#include "model/webhook_allow.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include <arpa/inet.h>
#include <netinet/in.h>

namespace gf {
namespace {

using Address = std::array<std::uint8_t, 16>;  // IPv6; IPv4 as ::ffff:a.b.c.d

constexpr int kMappedPrefixBits = 96;  // ::ffff:0:0/96 holds the IPv4-mapped addresses

bool IsMapped(const Address& a) {
  return std::all_of(a.begin(), a.begin() + 10, [](std::uint8_t b) { return b == 0; }) &&
         a[10] == 0xff && a[11] == 0xff;
}

Address Mapped(const in_addr& v4) {
  Address a{};
  a[10] = a[11] = 0xff;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(&v4.s_addr);  // network order
  std::copy(bytes, bytes + 4, a.begin() + 12);
  return a;
}

// An address in strict text form: "127.0.0.1", "::1", "::ffff:127.0.0.1".
std::optional<Address> ParseAddress(const std::string& text) {
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return Mapped(v4);
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    Address a{};
    std::copy(v6.s6_addr, v6.s6_addr + 16, a.begin());
    return a;
  }
  return std::nullopt;
}

// An address as a URL host may write it, which is how the resolver will read it: IPv6, or
// IPv4 in the forms inet_aton accepts ("127.1", "0x7f000001", "2130706433" are 127.0.0.1).
std::optional<Address> ParseUrlAddress(const std::string& host) {
  in_addr v4{};
  if (inet_aton(host.c_str(), &v4) != 0) {
    return Mapped(v4);
  }
  return ParseAddress(host);
}

std::string AddressText(const Address& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (IsMapped(a)) {
    inet_ntop(AF_INET, a.data() + 12, text, sizeof(text));
  } else {
    inet_ntop(AF_INET6, a.data(), text, sizeof(text));
  }
  return text;
}

// "loopback", "link-local", "unspecified", or "" for an address webhooks may reach.
std::string_view SpecialKind(const Address& a) {
  if (IsMapped(a)) {
    const std::uint8_t first = a[12];
    if (first == 127) {
      return "loopback";
    }
    if (first == 169 && a[13] == 254) {
      return "link-local";  // the cloud metadata service 169.254.169.254 among them
    }
    return first == 0 ? "unspecified" : "";  // 0.0.0.0/8: "this host" to the kernel
  }
  const bool zero_but_last =
      std::all_of(a.begin(), a.begin() + 15, [](std::uint8_t b) { return b == 0; });
  if (zero_but_last && a[15] == 1) {
    return "loopback";
  }
  if (zero_but_last && a[15] == 0) {
    return "unspecified";
  }
  return a[0] == 0xfe && (a[1] & 0xc0) == 0x80 ? "link-local" : "";
}

bool InBlock(const Address& a, const Address& block, int prefix_bits) {
  for (int bit = 0; bit < prefix_bits; ++bit) {
    const auto byte = static_cast<std::size_t>(bit / 8);
    const int mask = 0x80 >> (bit % 8);
    if ((a[byte] & mask) != (block[byte] & mask)) {
      return false;
    }
  }
  return true;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  if (!out.empty() && out.back() == '.') {
    out.pop_back();  // "localhost." is localhost
  }
  return out;
}

bool HostNameLike(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.';
  });
}

Error BadEntry(const std::string& entry, std::string_view why) {
  return InvalidArgument("'" + entry + "' " + std::string(why) +
                         "; give an address (\"127.0.0.1\"), a CIDR block (\"10.0.0.0/8\", "
                         "\"fe80::/10\"), a host name (\"hooks.lab\") or a domain (\"*.lab\")");
}

}  // namespace

Result<WebhookAllowList> WebhookAllowList::Parse(const std::vector<std::string>& entries) {
  WebhookAllowList list;
  for (const std::string& entry : entries) {
    const std::size_t slash = entry.find('/');
    const std::string address_text = entry.substr(0, slash);
    if (const std::optional<Address> address = ParseAddress(address_text)) {
      Block block{.bytes = *address};
      const bool v4 = address_text.find(':') == std::string::npos;
      const int max_bits = v4 ? 32 : 128;
      int bits = max_bits;
      if (slash != std::string::npos) {
        const std::string_view digits = std::string_view{entry}.substr(slash + 1);
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
        if (ec != std::errc() || end != digits.data() + digits.size() || bits < 0 ||
            bits > max_bits) {
          return BadEntry(entry, "has no prefix length from 0 to " + std::to_string(max_bits));
        }
      }
      block.prefix_bits = v4 ? kMappedPrefixBits + bits : bits;
      list.blocks_.push_back(block);
      continue;
    }
    const std::string name = Lower(entry);
    if (name.starts_with("*.") && HostNameLike(name.substr(2))) {
      list.suffixes_.push_back(name.substr(1));
    } else if (slash == std::string::npos && HostNameLike(name)) {
      list.names_.push_back(name);
    } else {
      return BadEntry(entry, "is not an address, a CIDR block or a host name");
    }
  }
  return list;
}

bool WebhookAllowList::AllowsName(std::string_view host) const {
  const std::string name = Lower(host);
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
    return true;
  }
  return std::any_of(suffixes_.begin(), suffixes_.end(), [&](const std::string& suffix) {
    return name.ends_with(suffix);
  });
}

bool WebhookAllowList::AllowsAddress(const Address& address) const {
  return std::any_of(blocks_.begin(), blocks_.end(), [&](const Block& b) {
    return InBlock(address, b.bytes, b.prefix_bits);
  });
}

Status WebhookAllowList::Check(std::string_view host,
                               const Address& address,
                               std::string_view shown) const {
  const std::string_view kind = SpecialKind(address);
  if (kind.empty() || AllowsAddress(address) || AllowsName(host)) {
    return OkStatus();
  }
  return InvalidArgument(std::string(shown) + ", a " + std::string(kind) +
                         " address: webhooks may not reach it (the server would send requests "
                         "to itself or its network's services); an admin may allow it with "
                         "[notify] webhook_allow = [\"" +
                         AddressText(address) + "\"] in the server's settings");
}

Status WebhookAllowList::CheckUrl(std::string_view url) const {
  const std::string host = WebhookUrlHost(url);
  if (host == "localhost" || host.ends_with(".localhost")) {  // always loopback (RFC 6761)
    in_addr loopback{};
    loopback.s_addr = htonl(INADDR_LOOPBACK);
    return Check(host, Mapped(loopback), "host " + host + " is 127.0.0.1");
  }
  if (const std::optional<Address> address = ParseUrlAddress(host)) {
    const std::string text = AddressText(*address);
    return Check(host, *address, "host " + host + (text == host ? "" : " is " + text));
  }
  return OkStatus();  // a name: its addresses are checked when it is resolved, at delivery
}

Status WebhookAllowList::CheckAddress(std::string_view host, std::string_view address) const {
  const std::optional<Address> parsed = ParseAddress(std::string(address));
  if (!parsed) {
    return InvalidArgument("host " + std::string(host) + " resolved to '" + std::string(address) +
                           "', which is not an IP address");
  }
  return Check(host, *parsed, "host " + std::string(host) + " resolves to " + AddressText(*parsed));
}

std::string WebhookUrlHost(std::string_view url) {
  const std::size_t scheme = url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    rest.remove_prefix(at + 1);  // userinfo
  }
  if (rest.starts_with('[')) {
    rest = rest.substr(1, rest.find_first_of("]%") - 1);  // an IPv6 literal, without a zone
  } else {
    rest = rest.substr(0, rest.find(':'));
  }
  return Lower(rest);
}

}  // namespace gf
