"""What the process keeps in memory, and what it computes once. Pure.

``slim``: what the informers keep of each object; ``parsed``: API objects parsed once per
version; ``memo``: the bounded LRU map the memos share.
"""
