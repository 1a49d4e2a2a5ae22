<?php

function handle_feed(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    if (strlen($param) > 3) {
        $bar = escapeshellarg($param);
    } else {
        $bar = escapeshellarg(substr($param, 0, 3));
    }
    system("ping -c 1 " . $bar);
}
