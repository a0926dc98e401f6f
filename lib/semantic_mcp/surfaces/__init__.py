"""Where the app shows up inside Nextcloud itself, through the PHP companion app ``semantic_search``
(companion/semantic_search): the search bar, and the re-checks that app answers in one request."""
