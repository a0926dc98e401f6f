<?php

declare(strict_types=1);

// The one endpoint the Semantic MCP ExApp calls: re-check a list of items for the signed user.
return [
	'ocs' => [
		['name' => 'Check#check', 'url' => '/api/v1/check', 'verb' => 'POST'],
	],
];
