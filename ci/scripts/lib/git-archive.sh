# shellcheck shell=bash
# git_archive_rebuild SRC_TGZ PREFIX COMMIT OUT [PATHSPEC...]
#
# Writes to OUT what `git archive --format=tar --prefix=PREFIX/ COMMIT
# [PATHSPEC...] | gzip -9n` writes in COMMIT's repository, from SRC_TGZ, any
# tarball of COMMIT's files under one top directory (GitHub's archive of a
# commit is one). git archive's bytes depend only on the tree, the commit's
# date and id and tar.umask: the files are committed again in a scratch
# repository with COMMIT's date (the archive's file times), archived by git,
# and COMMIT's id is put back into the pax header's comment, the one place
# the scratch commit's id appears. Whether that reproduced the pinned file is
# for the caller's sha256 to judge.
git_archive_rebuild() (
  set -euo pipefail
  src=$1 prefix=$2 commit=$3 out=$4
  shift 4
  w=$(mktemp -d)
  trap 'rm -rf "${w}"' EXIT
  mkdir "${w}/tree"
  tar -xzf "${src}" --strip-components=1 -C "${w}/tree" || { echo "unpack ${src}" >&2; return 1; }
  t=$(find "${w}/tree" -type f -printf '%T@\n' -quit | cut -d. -f1)
  [ -n "${t}" ] || { echo "${src} holds no file" >&2; return 1; }
  g=(env -u GIT_DIR -u GIT_WORK_TREE GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
    git -C "${w}/tree" -c core.autocrlf=false -c core.fileMode=true -c core.symlinks=true
    -c tar.umask=0002 -c user.name=cellguard -c user.email=cellguard@localhost)
  "${g[@]}" init -q &&
    "${g[@]}" add -A -f . &&
    GIT_COMMITTER_DATE="@${t} +0000" GIT_AUTHOR_DATE="@${t} +0000" "${g[@]}" commit -q --no-verify -m snapshot &&
    "${g[@]}" archive --format=tar --prefix="${prefix}/" HEAD "$@" >"${w}/a.tar" || { echo "git archive of ${src}" >&2; return 1; }
  # The pax global header: a 512-byte header, then "52 comment=<40 hex>\n".
  [ "$(dd if="${w}/a.tar" bs=1 skip=512 count=11 2>/dev/null)" = "52 comment=" ] ||
    { echo "git archive wrote no commit id where expected" >&2; return 1; }
  printf '%s' "${commit}" | dd of="${w}/a.tar" bs=1 seek=523 conv=notrunc 2>/dev/null
  gzip -9n <"${w}/a.tar" >"${out}"
)
