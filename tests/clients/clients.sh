#!/usr/bin/env bash
# The corpus of real clients: programs users run in production, installed from Debian by
# scripts/setup.sh, none written here. Each client has two parts:
#   prepare_NAME  makes its input in the working directory (not recorded)
#   run_NAME      is the workload fsrr records, in the working directory
# Usage: clients.sh list | clients.sh prepare|run|cleanup|allow|incomplete NAME DIR [SCALE]
# SCALE (default 1) multiplies the data set; with FSRR_CLIENT_DATA=DIR (bench/clients.sh: a
# seed tree), a copy of DIR joins it.
# Each client also names the differences its replay may show (causes of environment.h), beside
# listing_split, which any listing may show: allow_NAME prints them; and what in it fsrr cannot
# replay, as `fsrr info` words it: incomplete_NAME prints one reason a line.
set -euo pipefail

clients=(borg restic rdiff_backup rsync_link_dest tar_incremental postgres sqlite_wal dpkg_root
         make_c git pip_venv unzip zstd xz cpio find_exec cp_reflink mv_cross_fs
         attrs_acls sort_tmp python_compileall)

# A data set of a few hundred files of mixed sizes in $1, the same for every client; with
# FSRR_CLIENT_DATA (bench/clients.sh: a seed tree), a copy of that tree beside them, in bulk/.
make_data() {
  local dir=$1 n=$((${SCALE:-1} * 150)) i
  mkdir -p "$dir/docs" "$dir/src/lib" "$dir/media"
  [[ -n ${FSRR_CLIENT_DATA:-} ]] && cp -a "$FSRR_CLIENT_DATA" "$dir/bulk"
  for ((i = 0; i < n; i++)); do
    head -c $((1024 + i * 37)) /dev/urandom | base64 >"$dir/docs/note-$i.txt"
  done
  for ((i = 0; i < n / 3; i++)); do
    printf 'int f%d(int x) { return x * %d; }\n' "$i" "$i" >"$dir/src/lib/f$i.c"
  done
  for ((i = 0; i < 4; i++)); do head -c $((256 * 1024 * (i + 1))) /dev/urandom >"$dir/media/blob$i"; done
  ln -s docs/note-1.txt "$dir/latest"
}

# Files of a client's own that a later run sees changed, added and removed.
change_data() {
  local dir=$1
  echo changed >>"$dir/docs/note-3.txt"
  head -c 5000 /dev/urandom >"$dir/docs/new.bin"
  rm -f "$dir/docs/note-5.txt"
}

prepare_borg() { make_data data; mkdir home; }
run_borg() {
  export HOME=$PWD/home BORG_PASSPHRASE=fsrr BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes
  borg init -e repokey repo
  borg create --compression lz4 repo::one data
  change_data data
  borg create --compression zstd repo::two data
  borg prune --keep-last 1 repo
  borg list repo >/dev/null
}

prepare_restic() { make_data data; mkdir home; }
run_restic() {
  export HOME=$PWD/home RESTIC_PASSWORD=fsrr RESTIC_CACHE_DIR=$PWD/home/.cache/restic
  restic init -r repo -q
  restic backup -r repo -q data
  change_data data
  restic backup -r repo -q data
  restic forget -r repo -q --keep-last 1 --prune >/dev/null
}

prepare_rdiff_backup() { make_data data; }
run_rdiff_backup() {
  rdiff-backup backup data mirror >/dev/null
  change_data data
  sleep 1.1  # it refuses a second backup within the same second
  rdiff-backup backup data mirror >/dev/null
}

prepare_rsync_link_dest() { make_data data; }
run_rsync_link_dest() {
  rsync -aAHX data/ gen.1/
  change_data data
  rsync -aAHX --link-dest=../gen.1 data/ gen.2/
  echo again >>data/docs/note-7.txt
  rsync -aAHX --link-dest=../gen.2 data/ gen.3/
  rm -rf gen.1
}

prepare_tar_incremental() { make_data data; }
allow_tar_incremental() { echo no_clone; }  # its cp tries a clone first, refused on tmpfs
run_tar_incremental() {
  tar --listed-incremental=snar -czf level0.tar.gz data
  change_data data
  cp snar snar.1
  tar --listed-incremental=snar.1 --zstd -cf level1.tar.zst data
  mkdir restore
  tar --listed-incremental=/dev/null -xzf level0.tar.gz -C restore
  tar --listed-incremental=/dev/null --zstd -xf level1.tar.zst -C restore
}

# A database server started, loaded and stopped cleanly: WAL, fsync, sync_file_range,
# fallocate, and its POSIX shared memory (shm_open), run as the postgres user.
prepare_postgres() { mkdir pg; chown postgres: pg; }
allow_postgres() { echo credentials; }  # its PATH searches through /root, as the postgres user
run_postgres() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  runuser -u postgres -- "$bin/initdb" -D "$PWD/pg/data" -A trust -U postgres >/dev/null
  runuser -u postgres -- "$bin/pg_ctl" -D "$PWD/pg/data" -l "$PWD/pg/log" -w \
    -o "-k $PWD/pg -c listen_addresses='' -c dynamic_shared_memory_type=posix" start >/dev/null
  runuser -u postgres -- psql -h "$PWD/pg" -U postgres -q -c \
    "create table t(id int primary key, v text);
     insert into t select g, md5(g::text) from generate_series(1, 20000) g;
     create index on t(v); checkpoint;" >/dev/null
  runuser -u postgres -- "$bin/pg_ctl" -D "$PWD/pg/data" -m fast -w stop >/dev/null
}

prepare_sqlite_wal() { :; }
# The WAL index (db.sqlite-shm) is a file sqlite's connections share through MAP_SHARED: its
# bytes are written through the mapping, which fsrr follows by the pages' write faults.
run_sqlite_wal() {
  sqlite3 db.sqlite "pragma journal_mode=wal; create table t(id integer primary key, v text);" >/dev/null
  local i
  for i in 1 2 3 4 5; do
    sqlite3 db.sqlite "begin; insert into t(v) select hex(randomblob(64)) from
      (with recursive c(x) as (select 1 union all select x + 1 from c where x < 2000) select x from c);
      commit;"
  done
  sqlite3 db.sqlite "pragma wal_checkpoint(truncate); delete from t where id % 3 = 0; vacuum;" >/dev/null
}

# A package installed into a root of its own, as debootstrap and image builders do.
prepare_dpkg_root() {
  mkdir -p pkg/DEBIAN pkg/usr/share/fsrr-client/data pkg/usr/bin root/var/lib/dpkg/info \
    root/var/lib/dpkg/updates root/var/log
  touch root/var/lib/dpkg/status
  cat >pkg/DEBIAN/control <<EOF
Package: fsrr-client-test
Version: 1.0
Architecture: all
Maintainer: fsrr tests <fsrr@localhost>
Description: a package the client corpus installs
EOF
  make_data pkg/usr/share/fsrr-client/data
  rm -f pkg/usr/share/fsrr-client/data/latest
  printf '#!/bin/sh\necho hello\n' >pkg/usr/bin/fsrr-client-hello
  chmod 755 pkg/usr/bin/fsrr-client-hello
  dpkg-deb --build --root-owner-group pkg client.deb >/dev/null
}
run_dpkg_root() {
  dpkg --root="$PWD/root" --force-script-chrootless --force-not-root -i client.deb >/dev/null
  dpkg --root="$PWD/root" -L fsrr-client-test >/dev/null
  dpkg --root="$PWD/root" --force-script-chrootless --force-not-root -r fsrr-client-test >/dev/null
}

# A small C project built with make -j2: gcc, cc1, as and ld, and their temporary files.
prepare_make_c() {
  mkdir -p proj/src
  local i
  for i in $(seq 1 24); do
    printf '#include <stdio.h>\nint part%d(int x) { return x + %d; }\n' "$i" "$i" >"proj/src/part$i.c"
  done
  printf 'int part1(int);\nint main(void) { return part1(0) - 1; }\n' >proj/src/main.c
  cat >proj/Makefile <<'EOF'
SRC := $(wildcard src/*.c)
OBJ := $(SRC:src/%.c=build/%.o)
build/prog: $(OBJ)
	$(CC) -o $@ $^
build/%.o: src/%.c | build
	$(CC) -O1 -c -o $@ $<
build:
	mkdir -p build
clean:
	rm -rf build
EOF
}
run_make_c() {
  export TMPDIR=$PWD/tmp
  mkdir -p "$TMPDIR"
  make -s -C proj -j2
  ./proj/build/prog
  touch proj/src/part3.c
  make -s -C proj -j2
}

prepare_git() { make_data data; }
run_git() {
  export HOME=$PWD GIT_CONFIG_NOSYSTEM=1
  git config --global user.email fsrr@localhost
  git config --global user.name fsrr
  git config --global init.defaultBranch main
  git init -q repo
  cp -a data/. repo/
  git -C repo add -A
  git -C repo commit -qm one
  change_data repo
  git -C repo add -A
  git -C repo commit -qm two
  git clone -q repo clone
  git -C clone gc -q --aggressive
  git -C repo gc -q
}
allow_git() { echo no_clone; }  # its cp -a tries a clone first, refused on tmpfs

# A virtual environment and a package installed into it from Debian's wheels, offline.
prepare_pip_venv() { :; }
run_pip_venv() {
  export HOME=$PWD PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
  python3 -m venv venv
  venv/bin/pip install -q --no-index --find-links /usr/share/python-wheels setuptools
  venv/bin/python -c 'import setuptools'
}

prepare_unzip() { make_data data; zip -qr data.zip data; rm -rf data; }
run_unzip() {
  unzip -q data.zip -d out
  zip -qr again.zip out
  unzip -tq again.zip >/dev/null
}

prepare_zstd() { make_data data; tar -cf data.tar data; }
run_zstd() {
  zstd -q -T2 -6 data.tar -o data.tar.zst
  zstd -q -d data.tar.zst -o back.tar
  zstd -q -T2 -r --rm data/docs
  zstd -q -d -r --rm data/docs
}

prepare_xz() { make_data data; tar -cf data.tar data; }
run_xz() {
  xz -T2 -k -6 data.tar
  xz -d -c data.tar.xz >back.tar
  xz -k data/media/blob0
}

prepare_cpio() { make_data data; }
run_cpio() {
  find data -depth -print | cpio -o -H newc --quiet >data.cpio
  mkdir out
  (cd out && cpio -idm --quiet <../data.cpio)
}

prepare_find_exec() { make_data data; }
allow_find_exec() { echo no_clone; }  # cp tries a clone first, refused on tmpfs
run_find_exec() {
  find data -name '*.txt' -exec md5sum {} + >sums
  find data -name '*.c' -exec chmod 600 {} \;
  find data -type f -size +100k -exec cp {} {}.bak \;
  find data -name '*.bak' -delete
}

# cp --reflink: refused on the tmpfs it is recorded on, so copied; a clone where allowed.
prepare_cp_reflink() { make_data data; }
run_cp_reflink() {
  cp -a --reflink=auto data copy
  cp --reflink=auto data/media/blob1 blob1.copy
  cp -al data linked
}
allow_cp_reflink() { echo no_clone; }

# mv from a disk file system to tmpfs: rename fails with EXDEV, mv copies and deletes.
prepare_mv_cross_fs() {
  local away
  away=$(mktemp -d /var/tmp/fsrr-client-mv.XXXXXX)
  ln -s "$away" away
  make_data "$away/data"
}
run_mv_cross_fs() {
  local away
  away=$(readlink away)
  mv "$away/data" moved
  mv moved/docs "$away/docs-back"
  rm -rf "$away/docs-back"
}
cleanup_mv_cross_fs() { [[ -L away ]] && rm -rf "$(readlink away)"; true; }
allow_mv_cross_fs() { echo cross_device no_clone; }  # mv copies with a clone first, then bytes

prepare_attrs_acls() { make_data data; }
run_attrs_acls() {
  ln data/docs/note-2.txt hard
  ln -s data/docs sym
  ln -sf /etc/hostname abs-link
  chmod -R g-w,o-rwx data/src
  chown -R nobody:nogroup data/media
  chown -h nobody sym
  setfacl -m u:nobody:rx,g:nogroup:r data/docs/note-1.txt
  setfacl -d -m u:nobody:rwx data/src
  touch data/src/after-default-acl
  setfattr -n user.origin -v fsrr data/docs/note-2.txt
  setfattr -n user.other -v 12345 data/media/blob0
  setfattr -x user.other data/media/blob0
  getfacl -R data >/dev/null
  getfattr -d data/docs/note-2.txt >/dev/null
}

# sort of a file larger than its buffer: temporary runs in -T's directory, merged.
prepare_sort_tmp() { seq 1 200000 | shuf --random-source=<(yes) >numbers; }
run_sort_tmp() {
  mkdir tmp
  sort -n -S 256K -T tmp --parallel=2 numbers -o sorted
  sort -c -n sorted
}

prepare_python_compileall() { make_data data; mkdir pkg; for i in $(seq 1 40); do printf 'X = %d\n' "$i" >"pkg/m$i.py"; done; }
run_python_compileall() {
  python3 -m compileall -q -j 2 pkg
  python3 -c 'import sys; sys.path.insert(0, "."); import pkg.m7'
}

case ${1:-} in
  list) printf '%s\n' "${clients[@]}" ;;
  prepare | run | cleanup | allow | incomplete)
    name=$2
    cd "$3"
    SCALE=${4:-1}
    if declare -F "$1_$name" >/dev/null; then "$1_$name"; fi
    ;;
  *)
    echo "usage: clients.sh list | clients.sh prepare|run|cleanup|allow|incomplete NAME DIR [SCALE]" >&2
    exit 2
    ;;
esac
