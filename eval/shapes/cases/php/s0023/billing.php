<?php

function handle_billing(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    if (strlen($param) > 3) {
        $bar = escapeshellarg($param);
    } else {
        $bar = $param;
    }
    system("ping -c 1 " . $bar);
}
