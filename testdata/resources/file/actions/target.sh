# target.sh: sourced by this base's actions; sets $target, the file the
# resource manages, from the inputs dir and path. The path must stay inside
# dir, so absolute paths and ".." are refused.
path=${SOLAR_INPUT_PATH:-}
case /$path/ in
//) solar_die "input path is empty" ;;
//*) solar_die "input path must be relative to dir, got '$path'" ;;
*/../* | */./*) solar_die "input path must not contain . or .. components, got '$path'" ;;
*"$nl"*) solar_die "input path must be a single line" ;;
esac
path=${path%/}
target=$dir/$path
