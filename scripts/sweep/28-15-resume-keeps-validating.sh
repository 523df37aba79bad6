# 28-15: the README's resume (no --valid-* flags) keeps validating on the files the run started with and says
# so; when such a file is gone, the resume is refused with an error naming it.
. "$REPO/scripts/sweep-lib.sh"
limited 90 first $T --valid-src va.de --valid-tgt va.en --out m.ckpt
if [ "$RC" -ne 0 ]; then echo "wrong the first run failed: $(first first)"; exit; fi
limited 90 resumed "$ATTEND" train --src s.de --tgt s.en --out m.ckpt --resume m.ckpt --max-steps 20 --no-progress
if crashed resumed; then
  a="panic $(first resumed)"
elif [ "$RC" -ne 0 ]; then
  a="wrong the resume failed: $(first resumed)"
elif grep -q "validating on .*va.de and .*va.en from the checkpoint" resumed.out && grep -q "^validation at step 20 " resumed.out; then
  a="ok the resume validates on va.de and va.en from the checkpoint"
else
  a="wrong the resumed run trains without validation: $(grep -m1 '^checkpoint' resumed.out)"
fi
mv va.en va.en.moved
remember m.ckpt
limited 60 gone "$ATTEND" train --src s.de --tgt s.en --out m.ckpt --resume m.ckpt --max-steps 30 --no-progress
if [ "$RC" -eq 0 ]; then
  b="wrong the resume went on without validation although va.en is gone"
else
  b=$(judge gone "m.ckpt" "" "va.en" "no longer exists")
fi
combine "$a" "$b"
