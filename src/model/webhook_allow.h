// WebhookAllowList: where the server may POST webhooks (issue #20). A webhook is a request the
// root daemon makes to a URL any user gives, so without a rule a user could aim it at the
// server itself or at its neighbours on the link: a local admin API on 127.0.0.1, the cloud
// metadata service at 169.254.169.254 (server-side request forgery). The rule:
//
//   - A webhook may not reach a loopback (127.0.0.0/8, ::1), link-local (169.254.0.0/16,
//     fe80::/10) or unspecified (0.0.0.0/8, ::) address, nor an IPv6-mapped form of one
//     (::ffff:127.0.0.1),
//   - unless the administrator's allow-list ([notify] webhook_allow, docs/config.md) lets it:
//     an entry that is an address or a CIDR block ("127.0.0.1", "127.0.0.0/8", "fe80::/10")
//     allows the addresses in it; an entry that is a host name ("hooks.lab") or a domain
//     pattern ("*.lab": any name under lab) allows that URL host whatever it resolves to.
//   - Every other address (public, private 10/8, 192.168/16...) is allowed: webhooks to the
//     site's own services are the common case.
//
// Checked twice: on the URL's host when a subscription is made (CheckUrl: an address written
// in the URL, and "localhost"), and when a webhook is delivered, on every address the host
// name resolves to (CheckAddress): only the addresses that pass are connected to, so a name
// that resolves to 127.0.0.1 (or is made to, later) reaches nothing it should not.
//
// A plain value; its const methods are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gf {

class WebhookAllowList {
 public:
  WebhookAllowList() = default;  // allows no special address

  // The [notify] webhook_allow entries. Errors: kInvalidArgument naming the entry and the
  // forms accepted (the caller names the key).
  static Result<WebhookAllowList> Parse(const std::vector<std::string>& entries);

  // At subscription: whether the webhook URL (one CheckSubscriptionTarget accepted) may be
  // subscribed to, judging its host as written. Errors: kInvalidArgument naming the address,
  // its kind and the setting that would allow it.
  Status CheckUrl(std::string_view url) const;

  // At delivery: whether `address` (an IP address as text, "127.0.0.1" or "::1", one the URL's
  // `host` resolved to) may be connected to. Errors: as CheckUrl.
  Status CheckAddress(std::string_view host, std::string_view address) const;

 private:
  struct Block {  // an address block; IPv4 as its IPv4-mapped IPv6 form
    std::array<std::uint8_t, 16> bytes{};
    int prefix_bits = 128;
  };
  bool AllowsName(std::string_view host) const;
  bool AllowsAddress(const std::array<std::uint8_t, 16>& address) const;
  Status Check(std::string_view host,
               const std::array<std::uint8_t, 16>& address,
               std::string_view shown) const;

  std::vector<Block> blocks_;
  std::vector<std::string> names_;     // exact host names, lowercase
  std::vector<std::string> suffixes_;  // "*.lab" as ".lab"
};

// The host of a webhook URL as a client would connect to it: without userinfo, port or IPv6
// brackets, lowercase, without a trailing dot ("http://a@[::1]:80/x" → "::1").
std::string WebhookUrlHost(std::string_view url);

}  // namespace gf
