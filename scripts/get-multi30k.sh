#!/usr/bin/env bash
# get-multi30k.sh DIR — fetches Multi30k task 1 (Elliott et al. 2016, 2017; Barrault et al. 2018) from its upstream
# repository, https://github.com/multi30k/dataset (data/task1/raw/*.gz), into DIR, unpacked: train (29,000
# lines), val (1,014), test_2016_flickr (1,000) in .de, .en, .fr and .cs, and test_2017_flickr (1,000) in .de,
# .en and .fr (upstream has no Czech test_2017). Then MULTI30K=DIR is what the tests and scripts that need the
# data set read.
#
#   scripts/get-multi30k.sh data/multi30k && export MULTI30K=$PWD/data/multi30k
#
# It needs a network (curl or wget). Every file is checked, its line count and its SHA-256 against those of the
# upstream commit COMMIT (default below; another commit needs CHECK=lines, which checks the line counts only);
# DIR gets the files only when all 15 passed. MULTI30K_URL replaces the download address (a mirror, or a
# file:// URL of a folder of the .gz files). The data set is for non-commercial research and education (see the
# upstream README; it has no licence file) and asks to be cited.
set -euo pipefail
me=get-multi30k.sh
if [ $# -ne 1 ]; then
  echo "usage: scripts/get-multi30k.sh DIR   (fetches Multi30k into DIR)" >&2
  exit 2
fi
dir=$1
COMMIT=${COMMIT:-a3d2e0d26b56f3846f66a952536ffed4e401d05a}
CHECK=${CHECK:-sha256}
base=${MULTI30K_URL:-https://raw.githubusercontent.com/multi30k/dataset/$COMMIT/data/task1/raw}

# file, line count, SHA-256 of the unpacked file at COMMIT
files="
train.de 29000 2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72
train.en 29000 460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6
train.fr 29000 5925a3c18f1587b6b54b87743106e6e8ab93618edb6f65d19eac0621f853a10d
train.cs 29000 2be68b38c8d586ff4f54eb13cc6e1baaaa053695b3f070d3038303a47f2268da
val.de 1014 660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660
val.en 1014 1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227
val.fr 1014 5304e444d842e962b2dda4d816b70b22a1765b15401642b7ca37a67477e708dc
val.cs 1014 d53827e469b0a1ca8d57e9e26b2b64c4bc4b33f5479c7b03ae87ae5c882c3e33
test_2016_flickr.de 1000 4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16
test_2016_flickr.en 1000 399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182
test_2016_flickr.fr 1000 cb3160d69b002bb638e66cc7612fcd56cb0af82eadc9c142dedc438afb885ef6
test_2016_flickr.cs 1000 45adb85f688de8407fddcbe1b36dca15d12aab868149b337e2576f2d6d2ff8d8
test_2017_flickr.de 1000 c3078bc3b36808bf9d20eb2347ed6137016179ef59ec0d2b9b8ecc3fb2880081
test_2017_flickr.en 1000 ce1450ddc5ab0834502579d77a170849952e15a2938b34cc503bdc25ebb4fb98
test_2017_flickr.fr 1000 6f3764e31dac41e9455e612958bcfd4e877c5e15cd66df2c2b2be6d9bd83e5b6
"

if command -v curl >/dev/null; then
  get() { curl -fsSL --retry 2 --connect-timeout 20 -o "$2" "$1"; }
elif command -v wget >/dev/null; then
  get() { wget -q --tries=3 --timeout=20 -O "$2" "$1"; }
else
  echo "$me: needs curl or wget (apt-get install -y curl)" >&2
  exit 2
fi
command -v gunzip >/dev/null || { echo "$me: needs gunzip (apt-get install -y gzip)" >&2; exit 2; }

created=
[ -d "$dir" ] || created=yes
mkdir -p "$dir" || { echo "$me: cannot create $dir" >&2; exit 2; }
tmp=$(mktemp -d "$dir/.get-multi30k.XXXXXX")
# On failure DIR is left as it was: the files go there only at the end, and a DIR made here is removed if empty.
trap 'rm -rf "$tmp"; if [ -n "$created" ]; then rmdir "$dir" 2>/dev/null || true; fi' EXIT
while read -r name lines sum; do
  [ -n "$name" ] || continue
  url="$base/$name.gz"
  if ! err=$(get "$url" "$tmp/$name.gz" 2>&1); then
    echo "$me: cannot download $url: $(printf "%s\n" "${err:-failed}" | tail -n 1)" >&2
    echo "$me: is there a network? Nothing was written to $dir." >&2
    exit 1
  fi
  gunzip -q "$tmp/$name.gz" || { echo "$me: $url is not a gzip file" >&2; exit 1; }
  got=$(wc -l <"$tmp/$name")
  if [ "$got" -ne "$lines" ]; then
    echo "$me: $name has $got lines, want $lines: not Multi30k's $name (nothing was written to $dir)" >&2
    exit 1
  fi
  if [ "$CHECK" = sha256 ] && [ "$(sha256sum <"$tmp/$name" | cut -d' ' -f1)" != "$sum" ]; then
    echo "$me: $name differs from that of commit $COMMIT (its SHA-256 is not $sum; nothing was written to $dir)" >&2
    exit 1
  fi
  echo "$me: $name: $lines lines" >&2
done <<<"$files"
while read -r name _; do
  [ -n "$name" ] && mv -f "$tmp/$name" "$dir/$name"
done <<<"$files"
echo "$me: Multi30k is in $dir; export MULTI30K=$(cd "$dir" && pwd)" >&2
