// The Boost.Asio/Beast headers (with Asio's OpenSSL streams) and the short names for them that
// the api module's Beast files use. Internal to gf_api: include it only from the server's files
// (api_server.cpp, api_session.cpp, api_streams.cpp, through api_server_state.h) and
// api_client.cpp, so Beast (slow to compile) stays out of every other file and out of the public
// headers.
// Declarations only; no state.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace gf {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using LocalProtocol = net::local::stream_protocol;
using Tcp = net::ip::tcp;
namespace ssl = net::ssl;
using TlsStream = ssl::stream<Tcp::socket>;  // HTTPS: TLS over a TCP socket (OpenSSL)

}  // namespace gf
