<?php

function handle_account(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $num = 86;
    $bar = (7 * 18) - $num > 200 ? 'fixed_value' : $param;
    system("ping -c 1 " . $bar);
}
