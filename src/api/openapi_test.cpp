// docs/openapi.json and the server's route table describe the same API, in both directions.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/routes.h"

namespace gf {
namespace {

nlohmann::json LoadSpec() {
  std::ifstream in(GF_OPENAPI_PATH);
  EXPECT_TRUE(in.good()) << "cannot open " << GF_OPENAPI_PATH;
  return nlohmann::json::parse(in);
}

TEST(OpenApiTest, DescribesExactlyTheRouteTable) {
  const nlohmann::json spec = LoadSpec();
  EXPECT_EQ(spec["openapi"].get<std::string>().rfind("3.0", 0), 0u);
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& [path, item] : spec["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "parameters") {
        continue;
      }
      std::string upper = method;
      std::transform(upper.begin(), upper.end(), upper.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      documented.emplace(upper, path);
      EXPECT_TRUE(op.contains("responses")) << method << " " << path;
      EXPECT_TRUE(op.contains("operationId")) << method << " " << path;
    }
  }
  std::set<std::pair<std::string, std::string>> served;
  for (const RouteInfo& route : RouteTable()) {
    served.emplace(std::string(route.method), std::string(route.path));
  }
  for (const auto& route : served) {
    EXPECT_TRUE(documented.count(route)) << "not in openapi.json: " << route.first << " "
                                         << route.second;
  }
  for (const auto& route : documented) {
    EXPECT_TRUE(served.count(route)) << "documented but not served: " << route.first << " "
                                     << route.second;
  }
}

TEST(OpenApiTest, ErrorBodyIsDescribed) {
  const nlohmann::json spec = LoadSpec();
  const auto& error = spec["components"]["schemas"]["Error"];
  EXPECT_TRUE(error["properties"].contains("error"));
}

}  // namespace
}  // namespace gf
