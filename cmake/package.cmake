# The Debian package (`make deb`; docs/install.md): what `cmake --install` puts where, and CPack's
# DEB generator over it. The same rules serve the e2e test (tests/e2e/package_test.sh), which
# packages the debug build's binary with `cpack --config build/debug/CPackConfig.cmake`.
#
# Paths under /etc and /lib/systemd are absolute: Debian's, whatever the install prefix (the
# package's is /usr). `cmake --install` without DESTDIR would write there too; the package is
# the supported way to install.
include(GNUInstallDirs)

# The client users type in bin; gpufleetd, which it execs for the daemons and the local tools,
# in libexec/gpufleet (apps/gpufleet/CMakeLists.txt: the client finds it there relative to bin).
install(TARGETS gpufleet RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS gpufleetd RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/gpufleet)
install(FILES ${CMAKE_BINARY_DIR}/apps/gpufleet/gpufleet.1.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES deploy/debian/gpufleet.toml DESTINATION /etc/gpufleet)
install(FILES deploy/debian/gpufleet.default DESTINATION /etc/default RENAME gpufleet)
install(FILES deploy/debian/gpufleet.service
              deploy/debian/gpufleet-server.service
              deploy/debian/gpufleet-agent.service
        DESTINATION /lib/systemd/system)
install(FILES docs/install.md docs/config.md docs/cluster.md README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES deploy/gpufleet.example.toml DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpufleet)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "gpufleet maintainers <gpufleet@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU compute manager: queue, place, share and watch GPU work")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "gpufleet sees every GPU and every process on it, queues and places work by priority and "
    "team quota, shares GPUs, reaps idle ones and reports where the compute went. One command: "
    "`gpufleet up` for one server, `gpufleet server` and `gpufleet agent` for a cluster.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The debug build's binaries carry their symbols (hundreds of MB); nobody needs them installed.
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The package's revision: 1 for a release; the e2e test makes a newer build with
# `cpack -D CPACK_DEBIAN_PACKAGE_RELEASE=2`.
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
# Depends: from the shared libraries the binaries link (dpkg-shlibdeps, of dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# sqlite3 is not a dependency of the daemon (it links libsqlite3), only handy for admins.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "sqlite3, postgresql-client")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
