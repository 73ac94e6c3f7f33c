// The authorization table (authorization.h): who a caller is, what the table allows, how a
// refusal reads, and that docs/cluster.md prints the same table as the code. The table walked
// through real requests, over the Unix socket and TCP, is
// tests/integration/authorization_walk_test.cpp.
#include "controller/authorization.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/controller_test_util.h"

namespace gf {
namespace {

using ::testing::HasSubstr;

const Caller kRootOnSocket = TestCaller(0, "root");
const Caller kAliceOnSocket = TestCaller(1000, "alice");

Caller Anonymous() {
  return Caller{};
}

Caller NodeCaller(std::string node) {
  Caller caller;
  caller.via_token = true;
  caller.node = NodeId(std::move(node));
  return caller;
}

TEST(AuthorizationTest, PrincipalFollowsTheCredentialNotTheUid) {
  EXPECT_EQ(PrincipalOf(kRootOnSocket), Principal::kAdmin);
  EXPECT_EQ(PrincipalOf(kAliceOnSocket), Principal::kUser);
  // Issue #20: a token acting as root has its own role; root is an admin on the socket only.
  EXPECT_EQ(PrincipalOf(TokenCaller(0, "root", Role::kUser)), Principal::kUser);
  EXPECT_EQ(PrincipalOf(TokenCaller(0, "root", Role::kOperator)), Principal::kOperator);
  EXPECT_EQ(PrincipalOf(TokenCaller(0, "root", Role::kAdmin)), Principal::kAdmin);
  EXPECT_EQ(PrincipalOf(TokenCaller(1000, "alice", Role::kUser)), Principal::kUser);
  EXPECT_EQ(PrincipalOf(TokenCaller(1000, "alice", Role::kAdmin)), Principal::kAdmin);
  // The socket carries no role: a role there (which no transport sets) changes nothing.
  Caller socket_with_role = kAliceOnSocket;
  socket_with_role.role = Role::kAdmin;
  EXPECT_EQ(PrincipalOf(socket_with_role), Principal::kUser);
  EXPECT_EQ(PrincipalOf(NodeCaller("n1")), Principal::kNode);
  EXPECT_EQ(PrincipalOf(Anonymous()), Principal::kAnonymous);
}

TEST(AuthorizationTest, RootUserTokenTouchesOnlyItsOwnJobsAndMintsNoTokens) {
  const Caller root_user = TokenCaller(0, "root", Role::kUser);
  EXPECT_TRUE(Allows(root_user, Resource::kJob, Action::kCancel, Whose(root_user, 0)));
  EXPECT_FALSE(Allows(root_user, Resource::kJob, Action::kCancel, Whose(root_user, 1000)));
  EXPECT_FALSE(Allows(root_user, Resource::kJob, Action::kRead, Ownership::kOther));
  EXPECT_FALSE(Allows(root_user, Resource::kJob, Action::kList, Ownership::kOther));
  const Status token =
      Authorize(root_user, Resource::kToken, Action::kCreate, Ownership::kNone, "token create");
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().code, ErrorCode::kPermissionDenied);
  EXPECT_THAT(token.error().message,
              HasSubstr("token create: only an admin (root on the server's socket is one) may "
                        "create API tokens; you are root with an API token of role user"));
  EXPECT_TRUE(Authorize(kRootOnSocket, Resource::kToken, Action::kCreate, Ownership::kNone).ok());
}

TEST(AuthorizationTest, OwnershipIsTheOwnersUidForAuthenticatedCallersOnly) {
  EXPECT_EQ(Whose(kAliceOnSocket, 1000), Ownership::kOwn);
  EXPECT_EQ(Whose(kAliceOnSocket, 1001), Ownership::kOther);
  EXPECT_EQ(Whose(Anonymous(), 0), Ownership::kOther);  // uid 0 by default, yet nobody
  EXPECT_EQ(Whose(NodeCaller("n1"), 0), Ownership::kOther);
}

TEST(AuthorizationTest, RefusalsSayHowToAuthenticateOrWhoMay) {
  const Status anonymous =
      Authorize(Anonymous(), Resource::kJob, Action::kSubmit, Ownership::kNone, "submit");
  ASSERT_FALSE(anonymous.ok());
  EXPECT_THAT(anonymous.error().message, HasSubstr("submit: this connection is not authenticated"));
  const Status node = Authorize(NodeCaller(""), Resource::kJob, Action::kRead, Ownership::kOwn);
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.error().message, HasSubstr("job read: a node token is only for gpufleet agent"));
  const Status drain =
      Authorize(kAliceOnSocket, Resource::kNode, Action::kDrain, Ownership::kNone, "node drain");
  ASSERT_FALSE(drain.ok());
  EXPECT_THAT(drain.error().message,
              HasSubstr("node drain: only an operator or an admin (root on the server's socket "
                        "is one) may drain and resume nodes; you are alice on the server's "
                        "socket (role user)"));
}

TEST(AuthorizationTest, TheTableHasOneRulePerCellAndRefusesWhatItDoesNotName) {
  std::set<std::tuple<Resource, Action, Ownership>> seen;
  for (const AuthorizationRule& rule : AuthorizationTable()) {
    EXPECT_TRUE(seen.emplace(rule.resource, rule.action, rule.whose).second)
        << ToString(rule.resource) << " " << ToString(rule.action) << " " << ToString(rule.whose);
    // Nobody may do to another's what they may not do to their own.
    if (rule.whose == Ownership::kOther) {
      for (const AuthorizationRule& own : AuthorizationTable()) {
        if (own.resource == rule.resource && own.action == rule.action &&
            own.whose == Ownership::kOwn) {
          for (std::size_t p = 0; p < kPrincipalCount; ++p) {
            EXPECT_TRUE(own.allowed[p] || !rule.allowed[p])
                << ToString(rule.resource) << " " << ToString(rule.action);
          }
        }
      }
    }
  }
  EXPECT_FALSE(Allows(kRootOnSocket, Resource::kCluster, Action::kDelete, Ownership::kNone));
}

// ---- docs/cluster.md -------------------------------------------------------------------------

std::string Yes(bool allowed) {
  return allowed ? "yes" : "no";
}

// The code's table as the markdown rows docs/cluster.md must hold, cells trimmed.
std::vector<std::vector<std::string>> CodeRows() {
  std::vector<std::vector<std::string>> rows;
  for (const AuthorizationRule& r : AuthorizationTable()) {
    std::vector<std::string> row = {std::string(ToString(r.resource)),
                                    std::string(ToString(r.action)),
                                    std::string(ToString(r.whose))};
    for (const bool allowed : r.allowed) {
      row.push_back(Yes(allowed));
    }
    row.emplace_back(ToString(r.refusal));
    row.emplace_back(r.requests);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Trim(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  const auto last = text.find_last_not_of(' ');
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

// The rows of the first markdown table after `heading`, header and separator left out.
std::vector<std::vector<std::string>> DocRows(const std::string& heading) {
  std::ifstream in(GF_CLUSTER_DOC_PATH);
  EXPECT_TRUE(in.good()) << "cannot open " << GF_CLUSTER_DOC_PATH;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool under = false;
  int table_lines = 0;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      under = line == heading;
      continue;
    }
    if (!under || !line.starts_with("|")) {
      if (table_lines > 0) {
        break;  // the table ended
      }
      continue;
    }
    if (++table_lines <= 2) {
      continue;  // the header and the |---| line
    }
    std::vector<std::string> row;
    std::stringstream cells(line.substr(1));
    std::string cell;
    while (std::getline(cells, cell, '|')) {
      row.push_back(Trim(cell));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Markdown(const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  for (const auto& row : rows) {
    out += "|";
    for (const std::string& cell : row) {
      out += " " + cell + " |";
    }
    out += "\n";
  }
  return out;
}

TEST(AuthorizationTest, DocsPrintTheSameTable) {
  const auto doc = DocRows("## Who may do what");
  const auto code = CodeRows();
  EXPECT_EQ(doc, code) << "docs/cluster.md, section \"Who may do what\", must list these rows "
                          "(from src/controller/authorization.cpp), in this order:\n"
                       << Markdown(code);
}

}  // namespace
}  // namespace gf
