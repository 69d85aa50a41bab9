# `cmake --install` and `cpack` (a .deb): bin/fsrr, its man pages and bash completion
# (cli/CMakeLists.txt), the shipped traces, and the docs.
install(FILES ${PROJECT_SOURCE_DIR}/traces/seed000-rsync.trace
              ${PROJECT_SOURCE_DIR}/traces/seed000-tree.trace
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fsrr/traces)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian wants the changelog (of a native package: changelog.gz) compressed, and reproducibly so (no name, no time in the gzip).
set(changelog_gz ${PROJECT_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${changelog_gz}
  COMMAND sh -c "gzip -9nc \"$0\" >\"$1\"" ${PROJECT_SOURCE_DIR}/packaging/changelog
          ${changelog_gz}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog
  VERBATIM)
add_custom_target(fsrr_changelog ALL DEPENDS ${changelog_gz})
install(FILES ${changelog_gz} DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fsrr)
set(CPACK_PACKAGE_VENDOR "the fsrr developers")
set(CPACK_PACKAGE_CONTACT "fsrr developers <fsrr@packages.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "record file-system activity with eBPF and replay it on any file system")
set(CPACK_PACKAGE_DESCRIPTION
    "fsrr records what a real program (a backup copy, a database, a build)
does to the file system, every syscall with its thread and time, with
eBPF, into a compact trace. It replays the trace on any file system, from
generated data, with the recorded timing, and reports MiB/s, files/s and
per-op latency; compare does so on file systems it makes itself (ext4,
xfs, btrfs, tmpfs on loop images) and shows them side by side. Traces can
be anonymized, sliced, minimized, merged, and exchanged with fio and
strace.")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # fsrr_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: the shared libraries fsrr links
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libjs-chart.js")  # compare's page inlines it
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "e2fsprogs, xfsprogs, btrfs-progs")  # compare's mkfs
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin, rsync, fio")  # replay --mpi; workloads
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
