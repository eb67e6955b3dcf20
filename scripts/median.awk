# median.awk: the median for the pairwise scripts' summaries, prepended to
# their awk programs (awk "$(cat scripts/median.awk)"'...').
#
# med(v, k, n) returns the median of v[k, 1] to v[k, n] and sets the
# globals lo and hi to their least and greatest.
function med(v, k, n,   s, x, y, z) {
	for (x = 1; x <= n; x++) s[x] = v[k, x]
	for (x = 2; x <= n; x++) for (y = x; y > 1 && s[y-1] > s[y]; y--) { z = s[y]; s[y] = s[y-1]; s[y-1] = z }
	lo = s[1]; hi = s[n]
	return n % 2 ? s[(n+1)/2] : (s[n/2] + s[n/2+1]) / 2
}
